//! Shared by the real-socket test binaries: an in-process stub built from the
//! same flags `herdless stub` parses.

use clap::Parser;
use herdless_cli::cli::{Cli, Command};
use herdless_cli::stub::{admission_from_args, Stub};

/// Starts a stub with `herdless stub` flags on 127.0.0.1 port 0; returns it and
/// its device URL. It stops when the test's runtime ends.
pub(crate) fn start_stub(flags: &[&str]) -> (Stub, String) {
    let argv = ["herdless", "stub"].iter().chain(flags);
    let Command::Stub(args) = Cli::try_parse_from(argv).unwrap().command else {
        unreachable!()
    };
    let admission = admission_from_args(&args).unwrap();
    let listener = Stub::bind(0).unwrap();
    let (stub, _task) = Stub::start(listener, admission, std::future::pending()).unwrap();
    let url = format!("http://{}/device", stub.addr());
    (stub, url)
}
