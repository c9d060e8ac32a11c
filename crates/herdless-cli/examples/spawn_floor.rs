//! The floor of `herdless exec`'s overhead: a Rust program that only spawns
//! its arguments as a command and waits for it (`std::process::Command`, the
//! same `posix_spawn` path), with none of herdless's work. Compare
//! `herdless exec -- true` against it and against `true` alone:
//!
//! ```sh
//! cargo build --release -p herdless-cli --example spawn_floor
//! perf stat -r 300 target/release/examples/spawn_floor true
//! ```

use std::process::{Command, ExitCode};

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1);
    let Some(program) = args.next() else {
        eprintln!("usage: spawn_floor CMD [ARG...]");
        return ExitCode::from(2);
    };
    match Command::new(program).args(args).status() {
        Ok(status) => ExitCode::from(status.code().map_or(1, |c| c as u8)),
        Err(e) => {
            eprintln!("spawn_floor: {e}");
            ExitCode::from(127)
        }
    }
}
