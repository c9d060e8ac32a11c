//! Where the policy file is found.

use std::path::{Path, PathBuf};

use super::{ConfigError, FILE_NAME};

/// Where the policy file is: `explicit` (which must exist), else
/// `./herdless.toml`, else `<config dir>/herdless/herdless.toml`, else none.
///
/// # Errors
///
/// `explicit` names no file.
pub(crate) fn locate(explicit: Option<&Path>) -> Result<Option<PathBuf>, ConfigError> {
    if let Some(p) = explicit {
        let given = "(given by --config or HERDLESS_CONFIG)";
        let message = match std::fs::metadata(p) {
            Ok(m) if m.is_file() => return Ok(Some(p.to_owned())),
            Ok(m) if m.is_dir() => format!("is a directory, not a policy file {given}"),
            Ok(_) => format!("is not a regular file, not a policy file {given}"),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                format!("no such policy file {given}")
            }
            // A symlink loop, a directory that cannot be searched…
            Err(e) => format!("cannot read the policy file {given}: {e}"),
        };
        return Err(ConfigError {
            file: Some(p.to_owned()),
            line: None,
            key: None,
            message,
        });
    }
    let local = PathBuf::from(FILE_NAME);
    if local.is_file() {
        return Ok(Some(local));
    }
    Ok(user_config_path().filter(|p| p.is_file()))
}

/// `<config dir>/herdless/herdless.toml`, when the platform has a config dir.
pub(crate) fn user_config_path() -> Option<PathBuf> {
    dirs::config_dir().map(|d| d.join("herdless").join(FILE_NAME))
}

/// The error for `--policy NAME` when no file was found.
pub(crate) fn no_file_for(name: &str) -> ConfigError {
    let user = user_config_path()
        .map(|p| format!(" or {}", p.display()))
        .unwrap_or_default();
    ConfigError::plain(format!(
        "--policy {name}: no policy file found (looked for ./{FILE_NAME}{user}; pass --config PATH)"
    ))
}
