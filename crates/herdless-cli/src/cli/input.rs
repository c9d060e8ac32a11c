//! The command line and the environment as the OS gives them: bytes, not
//! necessarily UTF-8.
//!
//! Rules (docs/cli.md, "Input"):
//!
//! * Arguments are read as OS strings (`args_os`): where a path is meant
//!   (`--config`, `--out`) or a command's argument (after `--` in `exec` and
//!   `worker`), any bytes are taken and passed on as they are. Where text is
//!   meant (names, URLs, numbers) bytes that are not UTF-8 are a usage error
//!   that names the flag, the argument's place or the variable that held
//!   them ([`not_utf8`]): clap's own message says only that some argument
//!   did. Nothing here reads `std::env::args()` or `vars()`, which panic on
//!   such bytes.
//! * An empty variable that a flag reads (`HERDLESS_QUIET=`, `NATS_URL=`) is
//!   the same as an unset one ([`without_empty_env`]): scripts clear a
//!   variable by emptying it.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::OsStrExt;

use clap::{Arg, Command};

/// Whether a variable clap reads is set but empty (then the slower path of
/// [`without_empty_env`] is taken; otherwise the derive parses as usual).
pub(super) fn any_empty_var() -> bool {
    std::env::vars_os().any(|(k, v)| {
        v.is_empty()
            && k.to_str()
                .is_some_and(|k| k.starts_with("HERDLESS_") || k == "NATS_URL")
    })
}

/// Whether any `HERDLESS_*` variable is set, empty or not (then `exec` is
/// parsed by clap: see `plain_exec`).
pub(super) fn any_herdless_var() -> bool {
    std::env::vars_os().any(|(k, _)| k.as_bytes().starts_with(b"HERDLESS_"))
}

/// `cmd` with the variable of every flag whose variable is set but empty
/// taken away, in every subcommand: the flag is then as if unset.
pub(super) fn without_empty_env(cmd: Command) -> Command {
    fn drop_if_empty(a: Arg) -> Arg {
        let empty = a
            .get_env()
            .and_then(std::env::var_os)
            .is_some_and(|v| v.is_empty());
        if empty {
            a.env(None::<&'static str>)
        } else {
            a
        }
    }
    cmd.mut_args(drop_if_empty)
        .mut_subcommands(without_empty_env)
}

/// What held the bytes that are not UTF-8 behind clap's `InvalidUtf8`
/// error, and the bytes: the value of a flag (`--task-id X`, `--task-id=X`),
/// an argument by its place, or a variable a flag reads. `cmd` tells flags
/// that take a value from switches (`get --idempotency-key URL`: the URL).
pub(super) fn not_utf8(cmd: &Command, args: &[OsString]) -> Option<String> {
    let sub = args
        .get(1)
        .and_then(|s| s.to_str())
        .and_then(|s| cmd.find_subcommand(s))
        .unwrap_or(cmd);
    let takes_value = |flag: &str| {
        sub.get_arguments().any(|a| {
            let named = flag.strip_prefix("--").map_or_else(
                || flag.strip_prefix('-').and_then(|s| s.chars().next()) == a.get_short(),
                |long| Some(long) == a.get_long(),
            );
            named && a.get_action().takes_values()
        })
    };
    let shown = |v: &OsStr| format!("{v:?}");
    for (i, a) in args.iter().enumerate().skip(1) {
        if a == "--" {
            break; // a command's own arguments: any bytes are passed on
        }
        if a.to_str().is_some() {
            continue;
        }
        let lossy = a.to_string_lossy();
        if let Some((flag, _)) = lossy
            .split_once('=')
            .filter(|(f, _)| f.starts_with("--") && f.is_ascii())
        {
            // The flag is ASCII before the `=`: the rest is the value.
            let value = OsStr::from_bytes(&a.as_bytes()[flag.len() + 1..]);
            return Some(format!(
                "the value of {flag} is not valid UTF-8: {}",
                shown(value)
            ));
        }
        let before = args[i - 1].to_str().filter(|p| i > 1 && p.starts_with('-'));
        return Some(match before {
            Some(flag) if takes_value(flag) => {
                format!("the value of {flag} is not valid UTF-8: {}", shown(a))
            }
            _ => format!("argument {i} is not valid UTF-8: {}", shown(a)),
        });
    }
    sub.get_arguments()
        .filter_map(Arg::get_env)
        .find(|var| std::env::var_os(var).is_some_and(|v| v.to_str().is_none()))
        .map(|var| {
            format!(
                "the environment variable {} is not valid UTF-8",
                var.to_string_lossy()
            )
        })
}
