//! A reqwest client for the tests: ring installed as rustls's provider first.
//! Under `cargo test --workspace` the CLI's reqwest features (`rustls-no-provider`)
//! unify into these tests, and reqwest then takes rustls's process default.

/// `reqwest::Client::new()`, after making ring the process's TLS provider.
pub(crate) fn client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}
