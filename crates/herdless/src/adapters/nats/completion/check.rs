//! Whether a completion bucket that exists can be used: a stream of the
//! bucket's name made by someone else (a name collision), or a bucket made
//! by hand with other settings, would break the claim silently. A stream
//! with other subjects never sees the worker's writes (every request then
//! goes unanswered, and each task waits out the bucket before running
//! unclaimed); a history other than one value per key keeps old turns
//! where the latest is read; a TTL under the documented minimum drops a
//! running claim or a `done` record before its time (the lease wait
//! disappears with it); a limit on the records it holds (`max_msgs`,
//! `max_bytes`) evicts the oldest records before their TTL under the
//! `old` discard policy (a completed task then runs again when redelivered)
//! and refuses every new claim once full under `new`; refusing a key's
//! second value (`discard_new_per_subject`) fails every renewal and every
//! `done` record; fewer replicas than the task stream loses claims with a
//! server the tasks survive. Refused at start with what is wrong, rather
//! than used. (The discard policy on its own evicts nothing: with no
//! limit but the TTL and one value per key, `old` and `new` act alike.)

use std::time::Duration;

use async_nats::jetstream::stream;

/// What the worker needs of the bucket `bucket`: its subjects, one value
/// per key, a TTL of at least `ttl` (or none: kept forever), at least
/// `replicas` replicas.
pub(super) struct Wanted<'a> {
    pub(super) bucket: &'a str,
    pub(super) ttl: Duration,
    pub(super) replicas: usize,
}

/// What is wrong with the existing stream `found` as the bucket, or `None`
/// when it can be used.
pub(super) fn unusable(found: &stream::Config, want: &Wanted<'_>) -> Option<String> {
    let bucket = want.bucket;
    let subjects = format!("$KV.{bucket}.>");
    let wrong = if found.subjects != [subjects.clone()] {
        format!(
            "its stream {} has the subjects {:?}, not [\"{subjects}\"] (a stream of that name \
             that is not the bucket?)",
            found.name, found.subjects
        )
    } else if found.max_messages_per_subject != 1 {
        format!(
            "it keeps a history of {} values per key, not 1",
            found.max_messages_per_subject
        )
    } else if let Some(limit) = limit(found) {
        limit
    } else if found.discard_new_per_subject {
        "it refuses a key's second value (`discard_new_per_subject`): no claim could be renewed \
         nor a task recorded done"
            .to_string()
    } else if !found.max_age.is_zero() && found.max_age < want.ttl {
        format!(
            "its TTL is {}, under the least the claim needs, {} (the larger of the task \
             stream's duplicate window and {} ack waits)",
            humanize(found.max_age),
            humanize(want.ttl),
            super::TTL_ACK_WAITS
        )
    } else if found.num_replicas.max(1) < want.replicas {
        format!(
            "it has {} replica(s), fewer than the task stream's {}",
            found.num_replicas.max(1),
            want.replicas
        )
    } else {
        return None;
    };
    Some(format!(
        "the completion bucket {bucket} cannot be used: {wrong}. Delete it (`nats kv rm \
         {bucket}`) for the worker to create it, or run with --no-completion-record"
    ))
}

/// A limit on the records the stream holds (0 and -1 are none), and what
/// it does to them under the stream's discard policy.
fn limit(found: &stream::Config) -> Option<String> {
    let (setting, value) = if found.max_messages > 0 {
        ("max_msgs", found.max_messages)
    } else if found.max_bytes > 0 {
        ("max_bytes", found.max_bytes)
    } else {
        return None;
    };
    let does = match found.discard {
        stream::DiscardPolicy::Old => {
            "which evicts the oldest records before their TTL (discard `old`): a completed task \
             would run again"
        }
        stream::DiscardPolicy::New => "which refuses every new claim once reached (discard `new`)",
    };
    Some(format!("it has a limit `{setting}` of {value}, {does}"))
}

fn humanize(d: Duration) -> String {
    format!("{:.3}s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn good() -> stream::Config {
        stream::Config {
            name: "KV_herdless_done_TASKS".into(),
            subjects: vec!["$KV.herdless_done_TASKS.>".into()],
            max_messages_per_subject: 1,
            max_age: Duration::from_secs(300),
            num_replicas: 3,
            ..Default::default()
        }
    }

    const WANT: Wanted<'static> = Wanted {
        bucket: "herdless_done_TASKS",
        ttl: Duration::from_secs(300),
        replicas: 3,
    };

    #[test]
    fn the_bucket_as_the_worker_makes_it_is_usable() {
        assert_eq!(unusable(&good(), &WANT), None);
        let forever = stream::Config {
            max_age: Duration::ZERO,
            ..good()
        };
        assert_eq!(unusable(&forever, &WANT), None);
        // As the server reports "no limit" (-1), under either discard policy.
        for discard in [stream::DiscardPolicy::Old, stream::DiscardPolicy::New] {
            let unlimited = stream::Config {
                max_messages: -1,
                max_bytes: -1,
                discard,
                ..good()
            };
            assert_eq!(unusable(&unlimited, &WANT), None);
        }
    }

    #[test]
    fn each_wrong_setting_is_named_with_the_bucket() {
        let cases = [
            (
                stream::Config {
                    subjects: vec!["other.>".into()],
                    ..good()
                },
                "subjects",
            ),
            (
                stream::Config {
                    max_messages_per_subject: 5,
                    ..good()
                },
                "history of 5",
            ),
            (
                stream::Config {
                    max_age: Duration::from_secs(1),
                    ..good()
                },
                "TTL is 1.000s",
            ),
            (
                stream::Config {
                    num_replicas: 1,
                    ..good()
                },
                "1 replica(s)",
            ),
            (
                stream::Config {
                    max_messages: 2,
                    discard: stream::DiscardPolicy::Old,
                    ..good()
                },
                "`max_msgs` of 2, which evicts",
            ),
            (
                stream::Config {
                    max_bytes: 4096,
                    discard: stream::DiscardPolicy::Old,
                    ..good()
                },
                "`max_bytes` of 4096, which evicts",
            ),
            (
                stream::Config {
                    max_messages: 2,
                    discard: stream::DiscardPolicy::New,
                    ..good()
                },
                "`max_msgs` of 2, which refuses",
            ),
            (
                stream::Config {
                    discard_new_per_subject: true,
                    ..good()
                },
                "discard_new_per_subject",
            ),
        ];
        for (config, says) in cases {
            let m = unusable(&config, &WANT).expect("refused");
            assert!(m.contains("herdless_done_TASKS") && m.contains(says), "{m}");
        }
    }
}
