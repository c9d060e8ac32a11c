//! The TLS crypto provider: ring, installed as rustls's process default
//! before the first HTTP client is built (reqwest is built with
//! `rustls-no-provider`, so it takes the process default).
//!
//! Why ring and not aws-lc-rs, reqwest's default: async-nats already links
//! ring for the worker, so one provider serves both; aws-lc-rs is a C build
//! of about a minute of CPU on a first build and adds 2 MB to the binary
//! (measured in docs/performance.md). Both implement the same TLS 1.2 and
//! 1.3 suites rustls offers by default.

use std::sync::Once;

/// Makes ring the process's rustls provider (once; a provider some other
/// code installed first is kept).
pub(crate) fn install() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
}
