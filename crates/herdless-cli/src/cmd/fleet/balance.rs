//! The fleet's own round-robin balancer over its URLs (`herdless fleet URL
//! URL...`): each request, first tries and retries alike, goes to the next
//! URL in one turn shared by every worker, as a balancer in front of
//! several replicas sends each request it gets (nginx's and Envoy's
//! default). A retry therefore usually reaches another replica than the
//! try before it, which is what a replica in the field sees of its callers.
//!
//! Each worker's watch picks the URL of an attempt just before it is sent
//! ([`AttemptWatch::sending`](herdless::adapters::reqwest::AttemptWatch::sending));
//! the retry decisions stay the engine's. One atomic counter is the turn,
//! and one per URL counts what each got, for the report.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use serde::Serialize;

/// The URLs and whose turn it is.
#[derive(Debug)]
pub(crate) struct Balancer {
    urls: Vec<reqwest::Url>,
    turn: AtomicUsize,
    calls: Vec<AtomicU64>,
}

/// One URL and the requests it got (an element of the report's `urls`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct UrlCalls {
    /// The URL as given.
    pub(crate) url: String,
    /// Requests sent to it, first tries and retries.
    pub(crate) calls: u64,
}

impl Balancer {
    /// A balancer over `urls` (at least one).
    pub(crate) fn new(urls: Vec<reqwest::Url>) -> Self {
        assert!(!urls.is_empty(), "a fleet has a URL");
        let calls = urls.iter().map(|_| AtomicU64::new(0)).collect();
        Balancer {
            urls,
            turn: AtomicUsize::new(0),
            calls,
        }
    }

    /// The URL the calls are built with (the first).
    pub(crate) fn first(&self) -> &reqwest::Url {
        &self.urls[0]
    }

    /// Points `request` at the URL whose turn it is, and counts it.
    pub(crate) fn route(&self, request: &mut reqwest::Request) {
        let i = self.turn.fetch_add(1, Ordering::Relaxed) % self.urls.len();
        self.calls[i].fetch_add(1, Ordering::Relaxed);
        if self.urls.len() > 1 {
            *request.url_mut() = self.urls[i].clone();
        }
    }

    /// Each URL and the requests it got so far.
    pub(crate) fn report(&self) -> Vec<UrlCalls> {
        self.urls
            .iter()
            .zip(&self.calls)
            .map(|(u, c)| UrlCalls {
                url: u.to_string(),
                calls: c.load(Ordering::Relaxed),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_take_turns_over_the_urls() {
        let urls: Vec<reqwest::Url> = [
            "http://127.0.0.1:1/a",
            "http://127.0.0.1:2/b",
            "http://127.0.0.1:3/",
        ]
        .iter()
        .map(|u| u.parse().unwrap())
        .collect();
        let b = Balancer::new(urls.clone());
        let mut sent = Vec::new();
        for _ in 0..7 {
            let mut r = reqwest::Request::new(reqwest::Method::GET, b.first().clone());
            b.route(&mut r);
            sent.push(r.url().port().unwrap());
        }
        assert_eq!(sent, [1, 2, 3, 1, 2, 3, 1]);
        let calls: Vec<u64> = b.report().iter().map(|u| u.calls).collect();
        assert_eq!(calls, [3, 2, 2]);
        assert_eq!(b.report()[1].url, "http://127.0.0.1:2/b");
    }
}
