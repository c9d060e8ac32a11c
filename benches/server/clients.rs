//! The server bench's clients: the probe (requests at a fixed rate, their
//! latency) and `hold-h2` (requests held as HTTP/2 streams). What they read
//! and print apart from their sockets is in `herdless_benches::probe`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use herdless_benches::probe::{Tally, lag_fields};
use http::{Request, StatusCode};

use super::fail;

/// Sends `rate` requests a second for `secs`, at most `conns` at a time,
/// and prints the latency of the served (`200`) ones: what a client sees of
/// a service wrk overloads. The requests are paced by a thread of their own
/// sleeping to each one's time (request `n` at `n / rate`), so they arrive
/// evenly spaced. (Each connection on a timer of its own would not do:
/// started together, the timers tick in step and `conns` requests arrive at
/// once every interval, the last of each burst waiting behind the others; and
/// the runtime's timer rounds to whole milliseconds, bunching whatever falls
/// in one.) A request's latency runs from its send to its answer's end.
///
/// With several URLs the requests go to each in turn (the rate is the
/// total), and a line is printed for each, its URL last: services measured
/// in the same run, request by request, so that whatever stalls the machine
/// delays them alike (the paired runs of `scripts/server-latency.sh`: the
/// layer at `/`, the service alone at `/alone`).
pub(crate) fn probe(urls: &[String], rate: f64, secs: f64, conns: usize) {
    use http_body_util::BodyExt;
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(&e.to_string()));
    let uris: Vec<http::Uri> = urls
        .iter()
        .map(|u| u.parse().unwrap_or_else(|_| fail("a URL")))
        .collect();
    if uris.is_empty() {
        fail("a URL");
    }
    let (tx, mut due) = tokio::sync::mpsc::unbounded_channel::<Instant>();
    let total = (rate * secs) as u64;
    let pacer = std::thread::spawn(move || {
        let start = Instant::now();
        for n in 0..total {
            let at = start + Duration::from_secs_f64(n as f64 / rate);
            if let Some(wait) = at.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            if tx.send(at).is_err() {
                break;
            }
        }
    });
    let served = rt.block_on(async {
        let client = Client::builder(TokioExecutor::new()).build_http::<Body>();
        let in_flight = Arc::new(tokio::sync::Semaphore::new(conns.max(1)));
        let mut requests = tokio::task::JoinSet::new();
        let mut n = 0usize;
        let mut lags = Vec::new();
        while let Some(at) = due.recv().await {
            let which = n % uris.len();
            n += 1;
            let Ok(permit) = Arc::clone(&in_flight).acquire_owned().await else {
                break;
            };
            // How late it goes out: behind a stall, or waiting for one of
            // the `conns` in flight (a server slower than the rate).
            lags.push(at.elapsed().as_micros() as u64);
            let client = client.clone();
            let request = Request::get(uris[which].clone()).body(Body::empty());
            requests.spawn(async move {
                let _permit = permit;
                let answer = async {
                    let request = request.map_err(|_| ())?;
                    let t = Instant::now();
                    let response = client.request(request).await.map_err(|_| ())?;
                    let status = response.status();
                    let _ = response.into_body().collect().await;
                    Ok::<_, ()>((status, t.elapsed().as_micros() as u64))
                };
                (which, answer.await)
            });
        }
        let mut tally: Vec<Tally> = uris.iter().map(|_| Tally::default()).collect();
        while let Some(answer) = requests.join_next().await {
            let Ok((which, answer)) = answer else {
                fail("a probe request panicked");
            };
            match answer {
                Ok((status, us)) => tally[which].count(Some(status.as_u16()), us),
                Err(()) => tally[which].count(None, 0),
            }
        }
        (tally, lags)
    });
    let _ = pacer.join();
    let (tally, mut lags) = served;
    let lag = lag_fields(&mut lags);
    let mut nothing = false;
    for (k, t) in tally.into_iter().enumerate() {
        let url = if urls.len() > 1 { urls[k].as_str() } else { "" };
        nothing |= t.served.is_empty();
        println!("{}", t.line(&lag, url));
    }
    if nothing {
        fail("nothing served: no latency to measure");
    }
}

/// What the server's `/held` says (`?` when it has none), over a
/// connection of its own (HTTP/1.1).
async fn held_now(authority: &str) -> String {
    use http_body_util::BodyExt;
    use hyper_util::rt::TokioIo;
    let ask = async {
        let stream = tokio::net::TcpStream::connect(authority).await.ok()?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .ok()?;
        tokio::spawn(conn);
        let request = Request::get("/held")
            .header(http::header::HOST, authority)
            .body(Body::empty())
            .ok()?;
        let response = sender.send_request(request).await.ok()?;
        if response.status() != StatusCode::OK {
            return None;
        }
        let body = response.into_body().collect().await.ok()?.to_bytes();
        String::from_utf8(body.to_vec()).ok()
    };
    ask.await.unwrap_or_else(|| "?".into())
}

/// Holds `n` requests to `url` over HTTP/2 (h2c, prior knowledge): streams
/// on as few connections as the server's limit of concurrent streams per
/// connection allows (`per_conn`, hyper's default 200, less a margin), each
/// request sent and left waiting. Prints `sent N answered K held H` once
/// all are sent and two seconds have passed (K: those already answered; H:
/// what the server's `/held` says, `?` without one). Then, with
/// `release`, waits for every answer and prints how fast the served ones
/// came (`served S at R/s`: from the first to the last, over the time
/// between them); without, waits to be killed (what
/// `scripts/held-memory.sh` measures the server with).
pub(crate) fn hold_h2(url: &str, n: usize, per_conn: usize, release: bool) {
    use hyper_util::rt::{TokioExecutor, TokioIo};
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(&e.to_string()));
    let uri: http::Uri = url.parse().unwrap_or_else(|_| fail("a URL"));
    let authority = uri
        .authority()
        .map_or("127.0.0.1:80", |a| a.as_str())
        .to_string();
    rt.block_on(async {
        // Each answer: when, and whether served (`None`: no answer at all).
        let (done, mut answers) = tokio::sync::mpsc::unbounded_channel::<(Instant, Option<bool>)>();
        let per_conn = per_conn.max(1);
        let mut sent = 0;
        while sent < n {
            let stream = tokio::net::TcpStream::connect(&authority)
                .await
                .unwrap_or_else(|e| fail(&format!("connect: {e}")));
            let (sender, conn) =
                hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                    .await
                    .unwrap_or_else(|e| fail(&format!("handshake: {e}")));
            tokio::spawn(conn);
            for _ in 0..per_conn.min(n - sent) {
                let mut sender = sender.clone();
                let request = Request::get(uri.clone()).body(Body::empty());
                let request = request.unwrap_or_else(|e| fail(&e.to_string()));
                let done = done.clone();
                tokio::spawn(async move {
                    let status = match sender.ready().await {
                        Ok(()) => sender.send_request(request).await.ok().map(|r| r.status()),
                        Err(_) => None,
                    };
                    let _ = done.send((Instant::now(), status.map(|s| s == StatusCode::OK)));
                });
                sent += 1;
            }
        }
        drop(done);
        tokio::time::sleep(Duration::from_secs(2)).await;
        println!(
            "sent {n} answered {} held {}",
            answers.len(),
            held_now(&authority).await
        );
        if !release {
            tokio::time::sleep(Duration::from_secs(600)).await;
            return;
        }
        let (mut served, mut other, mut failed) = (Vec::new(), 0u64, 0u64);
        while let Some((at, status)) = answers.recv().await {
            match status {
                Some(true) => served.push(at),
                Some(false) => other += 1,
                None => failed += 1,
            }
        }
        let span = match (served.iter().min(), served.iter().max()) {
            (Some(first), Some(last)) => last.duration_since(*first).as_secs_f64(),
            _ => 0.0,
        };
        let rate = if span > 0.0 {
            (served.len() - 1) as f64 / span
        } else {
            0.0
        };
        println!(
            "served {} at {rate:.0}/s over {span:.2} s, other answers {other}, no answer {failed}",
            served.len()
        );
    });
}
