//! What `get` and `fleet` share about HTTP: the URLs they accept, the
//! message of a client that cannot be built, and the TLS provider ([`tls`]).

mod tls;

pub(crate) use tls::install as install_tls;

/// Validates a URL for `get` and `fleet`.
///
/// # Errors
///
/// A message when it is not an http(s) URL.
pub(crate) fn parse_url(url: &str) -> Result<reqwest::Url, String> {
    let u = reqwest::Url::parse(url).map_err(|e| format!("{url:?}: {e}"))?;
    match u.scheme() {
        "http" | "https" => Ok(u),
        s => Err(format!("{url:?}: unsupported scheme {s:?} (http or https)")),
    }
}

/// "cannot build the HTTP client: " and the error with its causes (reqwest's
/// own message is only "builder error"; the cause says what failed, e.g.
/// the trust store could not be read).
pub(crate) fn client_error(error: &reqwest::Error) -> String {
    let mut message = format!("cannot build the HTTP client: {error}");
    let mut source = std::error::Error::source(error);
    while let Some(e) = source {
        message.push_str(&format!(": {e}"));
        source = e.source();
    }
    message
}
