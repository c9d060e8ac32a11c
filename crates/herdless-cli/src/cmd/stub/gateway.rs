//! A gateway replica's flags (`--upstream`, `--upstream-timeout`,
//! `--coordinate`, `--replica-id`), checked: what the stub relays to, and
//! through which NATS server it shares what it learns.
//!
//! A gateway is the stub's pushback layer (and hold) in front of another
//! HTTP endpoint instead of the stub's own device (`relay.rs`): several of
//! them behind a balancer (`herdless fleet URL URL...`), in front of one
//! device (a `herdless stub --pushback off`), are the replicas of a service
//! in the field. With `--coordinate` they share their reports through the
//! key-value bucket `herdless_replicas_NAME` on that server, `NAME` the
//! upstream's `HOST:PORT` with every character other than a letter, a
//! digit, `_` or `-` made `_` (`127.0.0.1:4000` → `127_0_0_1_4000`): the
//! gateways in front of one upstream find each other without being told
//! more (`coordinate.rs`).

use std::time::Duration;

use axum::http::Uri;
use herdless::adapters::nats::check_replica_id;
use herdless_sim::report::units;

use super::args::{PushbackMode, StubArgs};

/// `--upstream-timeout` without the flag.
pub(crate) const DEFAULT_UPSTREAM_TIMEOUT: Duration = Duration::from_secs(10);

/// The range of `--upstream-timeout`.
const UPSTREAM_TIMEOUT_RANGE: std::ops::RangeInclusive<Duration> =
    Duration::from_millis(1)..=Duration::from_secs(3_600);

/// What a gateway relays to.
#[derive(Debug, Clone)]
pub(crate) struct Gateway {
    /// `http://HOST:PORT` (no path).
    pub(crate) upstream: Uri,
    /// The longest wait for the upstream's response head.
    pub(crate) timeout: Duration,
    /// The NATS server and bucket the replicas share, if any.
    pub(crate) coordinate: Option<Coordinate>,
}

/// Where the replicas share their reports.
#[derive(Debug, Clone)]
pub(crate) struct Coordinate {
    /// The NATS server's URL, as given.
    pub(crate) server: String,
    /// The bucket's `NAME` (the upstream's, see the module documentation).
    pub(crate) name: String,
    /// `--replica-id`; `None`: `HOSTNAME-PORT` once the port is known.
    pub(crate) replica: Option<String>,
}

/// The gateway the flags ask for (`None`: the stub serves its own device).
///
/// # Errors
///
/// A message naming the flag at fault: an upstream that is not an
/// `http://HOST:PORT` origin, a timeout out of range, `--capacity` without
/// pushback, `--coordinate` without the adaptive allocator, an invalid NATS
/// URL or replica id.
pub(crate) fn gateway(
    args: &StubArgs,
    mode: Option<PushbackMode>,
) -> Result<Option<Gateway>, String> {
    let Some(url) = &args.upstream else {
        return Ok(None);
    };
    let upstream = origin(url)?;
    let timeout = args.upstream_timeout.unwrap_or(DEFAULT_UPSTREAM_TIMEOUT);
    if !UPSTREAM_TIMEOUT_RANGE.contains(&timeout) {
        return Err(format!(
            "--upstream-timeout {}: must be within 1ms..=1h",
            units::duration(timeout)
        ));
    }
    if mode.is_none() && args.capacity.is_some() {
        return Err(
            "--capacity with --upstream is the capacity pushback is told, and --pushback off \
             turns pushback off (drop --capacity for a plain relay, or --pushback off)"
                .into(),
        );
    }
    let coordinate = match &args.coordinate {
        None => None,
        Some(server) => Some(coordinate(args, mode, server, &upstream)?),
    };
    Ok(Some(Gateway {
        upstream,
        timeout,
        coordinate,
    }))
}

/// `--upstream URL` as an origin: `http`, a host, no path but `/`, no query.
fn origin(url: &str) -> Result<Uri, String> {
    let bad = |why: &str| format!("--upstream {url:?}: {why}");
    let uri: Uri = url.parse().map_err(|e| bad(&format!("not a URL ({e})")))?;
    if uri.scheme_str() != Some("http") {
        return Err(bad(
            "give an http://HOST:PORT origin (the gateway speaks plain HTTP/1.1 to its upstream)",
        ));
    }
    let Some(authority) = uri.authority().cloned() else {
        return Err(bad("no host"));
    };
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    if path != "/" {
        return Err(bad(
            "give the origin alone (http://HOST:PORT): each request's own path and query are \
             forwarded",
        ));
    }
    Uri::builder()
        .scheme("http")
        .authority(authority)
        .path_and_query("/")
        .build()
        .map_err(|e| bad(&e.to_string()))
}

/// `--coordinate SERVER` (and `--replica-id`), checked.
fn coordinate(
    args: &StubArgs,
    mode: Option<PushbackMode>,
    server: &str,
    upstream: &Uri,
) -> Result<Coordinate, String> {
    if mode != Some(PushbackMode::On) {
        return Err(
            "--coordinate shares what the adaptive allocator learns: it needs --capacity with \
             --pushback on (the default)"
                .into(),
        );
    }
    let addr = server
        .parse::<async_nats::ServerAddr>()
        .map_err(|e| format!("--coordinate {server:?}: not a NATS server URL ({e})"))?;
    if addr.host().is_empty() {
        // `nats://` parses, and then connects nowhere, forever.
        return Err(format!(
            "--coordinate {server:?}: no host (give nats://HOST:PORT)"
        ));
    }
    if let Some(id) = &args.replica_id {
        check_replica_id(id).map_err(|e| format!("--replica-id: {e}"))?;
    }
    let authority = upstream.authority().map_or("", |a| a.as_str());
    Ok(Coordinate {
        server: server.to_owned(),
        name: bucket_name(authority),
        replica: args.replica_id.clone(),
    })
}

/// The bucket's `NAME` for an upstream's `HOST:PORT`.
fn bucket_name(authority: &str) -> String {
    authority
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The default replica id: `HOSTNAME-PORT`, characters a key cannot hold
/// made `_` (`stub-PORT` without a usable hostname).
pub(crate) fn default_replica_id(port: u16) -> String {
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_default();
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let host = host.trim_matches('.');
    let id = format!("{host}-{port}");
    if host.is_empty() || check_replica_id(&id).is_err() {
        format!("stub-{port}")
    } else {
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_upstream_is_an_http_origin() {
        assert_eq!(
            origin("http://127.0.0.1:4000").unwrap(),
            "http://127.0.0.1:4000/"
        );
        assert_eq!(origin("http://db:80/").unwrap(), "http://db:80/");
        for (bad, says) in [
            ("https://db:443", "plain HTTP"),
            ("http://db:80/device", "origin alone"),
            ("http://db:80/?a=1", "origin alone"),
            ("db:80", "http://HOST:PORT"),
            ("not a url", "not a URL"),
        ] {
            let e = origin(bad).unwrap_err();
            assert!(e.contains("--upstream") && e.contains(says), "{bad}: {e}");
        }
    }

    #[test]
    fn a_nats_url_without_a_host_is_refused() {
        use clap::Parser;
        let args = |server: &str| {
            let argv = [
                "herdless",
                "stub",
                "--upstream",
                "http://127.0.0.1:4000",
                "--capacity",
                "100",
                "--coordinate",
                server,
            ];
            match crate::cli::Cli::try_parse_from(argv).unwrap().command {
                crate::cli::Command::Stub(a) => a,
                _ => unreachable!("parsed as stub"),
            }
        };
        for bad in ["nats://", "nats://:4222"] {
            let e = gateway(&args(bad), Some(PushbackMode::On)).unwrap_err();
            assert!(
                e.contains("--coordinate") && e.contains("host"),
                "{bad}: {e}"
            );
        }
        let ok = gateway(&args("nats://127.0.0.1:4222"), Some(PushbackMode::On)).unwrap();
        assert_eq!(
            ok.unwrap().coordinate.unwrap().server,
            "nats://127.0.0.1:4222"
        );
    }

    #[test]
    fn the_bucket_is_named_after_the_upstream_and_the_replica_after_its_host() {
        assert_eq!(bucket_name("127.0.0.1:4000"), "127_0_0_1_4000");
        assert_eq!(bucket_name("db-1:80"), "db-1_80");
        let id = default_replica_id(8080);
        assert!(id.ends_with("-8080"), "{id}");
        assert!(check_replica_id(&id).is_ok(), "{id}");
    }
}
