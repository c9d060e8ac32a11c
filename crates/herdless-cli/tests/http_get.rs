//! `herdless get` over real sockets on 127.0.0.1: statuses, Retry-After, limits,
//! descriptor shortage, redirects, TLS and plans of waves (bodies:
//! `get_body.rs`).
//!
//! The stub runs in-process (the library's `stub::Stub`, built from the same
//! flags the binary parses) on port 0; `get` and `fleet` run as the built
//! binary. Time-dependent checks use small bases and bounds that hold on a
//! loaded 2-core machine.

#[allow(dead_code)] // each test binary uses part of it
mod support;
use support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_401_makes_exactly_one_request() {
    let (stub, url) = start_stub(&["--fail-first", "1", "--fail-status", "401"]);
    let out = herdless(&["get", "--base", "10ms", "--log-format", "json", &url]).await;
    assert_eq!(out.status.code(), Some(3), "terminal exit code");
    assert!(out.stdout.is_empty());
    assert_eq!(statuses(&stub.stats().arrivals), vec![401]);
    let ev = events(&out);
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0]["event"], "retry_abandoned_terminal");
    assert_eq!(ev[0]["attempt"], 1);
    assert_eq!(ev[0]["classification"], "terminal");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_503_503_200_succeeds_on_the_third_with_events() {
    let (stub, url) = start_stub(&["--fail-first", "2"]);
    let out = herdless(&[
        "get",
        "--base",
        "20ms",
        "--log-format",
        "json",
        "--task-id",
        "scan-7",
        &url,
    ])
    .await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(out.stdout, b"ok\n");
    assert_eq!(statuses(&stub.stats().arrivals), vec![503, 503, 200]);
    let ev = events(&out);
    let names: Vec<&str> = ev.iter().map(|e| e["event"].as_str().unwrap()).collect();
    assert_eq!(
        names,
        vec!["retry_scheduled", "retry_scheduled", "retry_succeeded"]
    );
    assert_eq!(ev[0]["attempt"], 1);
    assert_eq!(ev[1]["attempt"], 2);
    assert_eq!(ev[2]["attempt"], 3);
    for e in &ev {
        assert_eq!(e["task_id"], "scan-7");
        assert!(e["elapsed_s"].is_f64());
    }
    // Full jitter: the first retry waits at most the base, the second twice it.
    assert!(ev[0]["sleep_s"].as_f64().unwrap() <= 0.020);
    assert!(ev[1]["sleep_s"].as_f64().unwrap() <= 0.040);
    assert_eq!(ev[0]["honored_retry_after"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_after_2_is_honored_within_the_spread() {
    let (stub, url) = start_stub(&["--fail-first", "1", "--retry-after", "2"]);
    let out = herdless(&["get", "--base", "10ms", "--log-format", "json", &url]).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let ev = events(&out);
    assert_eq!(ev[0]["event"], "retry_scheduled");
    assert_eq!(ev[0]["honored_retry_after"], true);
    let sleep = ev[0]["sleep_s"].as_f64().unwrap();
    // The default spread is +0 % to +10 %: never earlier than asked.
    assert!((2.0..=2.2).contains(&sleep), "slept {sleep}");
    // The server saw the retry about 2 s later (upper bound loose for a loaded machine).
    let a = stub.stats().arrivals;
    assert_eq!(statuses(&a), vec![503, 200]);
    let gap = a[1].t_s - a[0].t_s;
    assert!((2.0..3.5).contains(&gap), "gap {gap}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_retry_after_is_clamped() {
    let (stub, url) = start_stub(&["--fail-first", "2", "--retry-after", "99999999999999999999"]);
    let out = herdless(&[
        "get",
        "--base",
        "10ms",
        "--max-retry-after",
        "300ms",
        "--log-format",
        "json",
        &url,
    ])
    .await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let ev = events(&out);
    for e in ev.iter().filter(|e| e["event"] == "retry_scheduled") {
        assert_eq!(e["honored_retry_after"], true);
        let sleep = e["sleep_s"].as_f64().unwrap();
        // Clamped to 300 ms, then spread by +0 to 10 %: never below the clamp.
        assert!((0.3..=0.33 + 1e-9).contains(&sleep), "slept {sleep}");
    }
    assert_eq!(statuses(&stub.stats().arrivals), vec![503, 503, 200]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_date_in_the_past_falls_back_to_jitter() {
    let (stub, url) = start_stub(&[
        "--fail-first",
        "1",
        "--retry-after",
        "Wed, 21 Oct 2015 07:28:00 GMT",
    ]);
    let out = herdless(&["get", "--base", "50ms", "--log-format", "json", &url]).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let ev = events(&out);
    assert_eq!(ev[0]["event"], "retry_scheduled");
    assert_eq!(ev[0]["honored_retry_after"], false);
    assert_eq!(ev[0]["sleep_s"], ev[0]["computed_jitter_s"]);
    assert!(ev[0]["sleep_s"].as_f64().unwrap() <= 0.05);
    assert_eq!(statuses(&stub.stats().arrivals), vec![503, 200]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_exhausts_the_budget_with_exit_4_and_rejects_bad_input_with_2() {
    let (stub, url) = start_stub(&["--fail-first", "100"]);
    let out = herdless(&[
        "get",
        "--base",
        "5ms",
        "--max-attempts",
        "3",
        "--log-format",
        "json",
        &url,
    ])
    .await;
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert_eq!(stub.stats().total, 3);
    let last = events(&out).pop().unwrap();
    assert_eq!(last["event"], "retry_budget_exhausted");
    assert_eq!(last["reason"], "max_attempts");
    for bad in [
        vec!["get", "ftp://127.0.0.1/"],
        vec!["get", "--header", "nocolon", &url],
        vec!["get", "--base", "soon", &url],
        vec!["get", "--cap", "1ms", "--base", "1s", &url],
    ] {
        let out = herdless(&bad).await;
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {out:?}");
        assert!(!out.stderr.is_empty());
    }
}

/// "Too many open files" is a local, transient shortage: a `get` that cannot
/// open its socket retries instead of giving up after one attempt. Scans the
/// limits around the one where the runtime starts but the socket cannot be
/// opened (where exactly depends on the descriptors the process inherits).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_retries_when_out_of_file_descriptors() {
    let (_stub, url) = start_stub(&[]);
    let mut exercised = false;
    for limit in 3..=24 {
        let out = herdless_limited(
            limit,
            &[
                "get",
                "--base",
                "1ms",
                "--max-attempts",
                "2",
                "--log-format",
                "json",
                &url,
            ],
        )
        .await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        let names: Vec<String> = events(&out)
            .iter()
            .map(|e| e["event"].as_str().unwrap_or_default().to_owned())
            .collect();
        assert!(
            !names.iter().any(|n| n == "retry_abandoned_terminal"),
            "ulimit -n {limit}: out of descriptors is not terminal: {stderr}"
        );
        if stderr.contains("Too many open files") && names.iter().any(|n| n == "retry_scheduled") {
            assert_eq!(out.status.code(), Some(4), "ulimit -n {limit}: {stderr}");
            exercised = true;
        }
        if out.status.success() {
            break;
        }
    }
    assert!(exercised, "no limit made the socket fail");
}

/// A redirect to an unreachable host: the error names the URL that failed
/// (not the one asked for) and the redirect chain.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_redirect_names_the_url_that_failed_and_the_chain() {
    use axum::http::{StatusCode, header};
    let app = axum::Router::new()
        .route(
            "/start",
            axum::routing::get(|| async { (StatusCode::FOUND, [(header::LOCATION, "/hop")]) }),
        )
        .route(
            "/hop",
            axum::routing::get(|| async {
                (
                    StatusCode::FOUND,
                    [(header::LOCATION, "http://127.0.0.1:1/gone")],
                )
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let start = format!("http://{addr}/start");
    let out = herdless(&["get", "--max-attempts", "1", &start]).await;
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{stderr}");
    assert!(
        stderr.contains("for url (http://127.0.0.1:1/gone)"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "(the request to http://127.0.0.1:1/gone failed, after redirects: \
             {start} -> http://{addr}/hop -> http://127.0.0.1:1/gone)"
        )),
        "{stderr}"
    );
}

/// The library forces no TLS backend; the CLI brings rustls for itself, so
/// `get` and `fleet` speak TLS to an `https` URL: the first bytes on the wire
/// are a TLS handshake record (type 22, version 3.x), not plain HTTP.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_and_fleet_speak_tls_to_an_https_url() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://{}/", listener.local_addr().unwrap());
    let get = ["get", "--max-attempts", "1", "--timeout", "5s", &url];
    let fleet = ["fleet", "--workers", "1", "--max-attempts", "1", &url];
    for args in [&get[..], &fleet[..]] {
        let (out, head) = tokio::join!(herdless(args), first_bytes_sent(&listener));
        assert_eq!(head[..2], [0x16, 0x03], "{args:?}: {out:?}");
        assert_ne!(out.status.code(), Some(0), "no TLS server: {out:?}");
    }
}

/// Against `stub --waves`: a refusal carries the plan (`Herdless-Plan`)
/// and `get` comes back in its own wave, computed from its `X-Worker-Id`
/// (its guard's draw; the library's tests tell it from the `Retry-After`,
/// which names a point in the same wave so that plain clients come then
/// too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_comes_back_in_its_wave_of_an_announced_plan() {
    // 1 request/s, a population of 4: 4 / 0.95 per s = 4.2 s in 5 waves.
    let (stub, url) = start_stub(&["--capacity", "1", "--waves", "4"]);
    let client = http_client();
    // Probe until a refusal announces the plan: the admission before it
    // leaves no room for a second before get's first try.
    let mut plan = None;
    for i in 0..3 {
        let r = client
            .get(&url)
            .header("x-worker-id", format!("p{i}"))
            .send()
            .await
            .unwrap();
        if let Some(v) = r.headers().get("herdless-plan") {
            plan = Some(
                v.to_str()
                    .unwrap()
                    .parse::<herdless::pushback::waves::WavePlan>()
                    .unwrap(),
            );
            break;
        }
    }
    let plan = plan.expect("a refusal announced the plan");
    assert_eq!(plan.waves(), 5);
    let out = herdless(&["get", "-H", "X-Worker-Id: 42", "--log-format", "json", &url]).await;
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let ev = events(&out);
    assert_eq!(ev[0]["event"], "retry_scheduled", "{ev:?}");
    assert_eq!(ev[0]["honored_retry_after"], true);
    let slept = ev[0]["sleep_s"].as_f64().unwrap();
    let wave = f64::from(plan.wave_of(herdless::pushback::allocator::caller_key(b"42")));
    let spacing = plan.spacing().as_secs_f64();
    let start = plan.start_ms() as f64 / 1e3;
    // Measured from get's refusal, which came after the probe's (its
    // process started meanwhile: up to half a second on a loaded machine).
    let (lo, hi) = (start + wave * spacing - 0.5, start + (wave + 1.0) * spacing);
    assert!(
        slept >= lo && slept < hi,
        "slept {slept} s, wave {wave}: {lo}..{hi}"
    );
    let mine: Vec<_> = stub
        .stats()
        .arrivals
        .into_iter()
        .filter(|a| a.worker.as_deref() == Some("42"))
        .map(|a| a.status)
        .collect();
    assert_eq!(mine, vec![503, 200]);
}

/// A refusal carrying a plan and no `Retry-After`: `get` waits for its
/// wave (an honored server delay, within the plan's one wave of 0.3 s to
/// 0.4 s); with `--ignore-plan` it takes its own jitter (not honored, at
/// most the 10 ms base).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_ignores_a_plan_of_waves_when_told() {
    let refuse_then_serve = |n: usize| {
        if n % 2 == 0 {
            raw_server::Reply::Raw(
                b"HTTP/1.1 503 X\r\nherdless-plan: start=0.3, waves=1, spacing=0.1, salt=7\r\n\
                  content-length: 0\r\nconnection: close\r\n\r\n"
                    .to_vec(),
            )
        } else {
            raw_server::Reply::Body {
                body: std::sync::Arc::new(b"ok".to_vec()),
                chunked: false,
            }
        }
    };
    let (url, _) = raw_server::serve(refuse_then_serve).await;
    for (ignore, honored) in [(false, true), (true, false)] {
        let mut args = vec!["get", "--base", "10ms", "--log-format", "json"];
        if ignore {
            args.push("--ignore-plan");
        }
        args.push(&url);
        let out = herdless(&args).await;
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let ev = events(&out);
        assert_eq!(ev[0]["event"], "retry_scheduled", "{ev:?}");
        assert_eq!(ev[0]["honored_retry_after"], honored, "{ev:?}");
        let slept = ev[0]["sleep_s"].as_f64().unwrap();
        if honored {
            assert!((0.3..0.4).contains(&slept), "{slept}");
        } else {
            assert!(slept <= 0.01, "{slept}");
        }
    }
}
