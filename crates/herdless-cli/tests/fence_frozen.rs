//! `herdless fence` frozen (SIGSTOP) while its worker keeps extending the
//! fence: on waking it must read the extensions waiting in its pipe, and
//! report its command's status, before it acts on a deadline that passed
//! while it was stopped.
//!
//! (Before, its `select!` favoured the lapsed timer: it killed a finished,
//! still-fenced attempt, which the worker then reported as status 137 and
//! ran again.)

use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill, killpg};
use nix::time::{ClockId, clock_gettime};
use nix::unistd::Pid;

/// "You may run until now + `ahead`", on the clock the supervisor reads.
fn extension(ahead: Duration) -> [u8; 8] {
    let now = Duration::from(clock_gettime(ClockId::CLOCK_MONOTONIC).expect("monotonic clock"));
    let until = u64::try_from((now + ahead).as_millis()).expect("milliseconds fit");
    until.to_be_bytes()
}

#[test]
fn a_frozen_supervisor_reads_waiting_extensions_before_its_deadline() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_herdless"))
        .args(["fence", "--", "sh", "-c", "sleep 0.3; exit 0"])
        .stdin(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("start the supervisor");
    let pid = Pid::from_raw(i32::try_from(child.id()).expect("pid fits"));
    let mut wire = child.stdin.take().expect("its stdin");
    let ahead = Duration::from_secs(1);
    // An empty payload (length 0), then the first extension.
    wire.write_all(&0_u64.to_be_bytes()).expect("payload frame");
    wire.write_all(&extension(ahead)).expect("first extension");
    std::thread::sleep(Duration::from_millis(100));
    kill(pid, Signal::SIGSTOP).expect("freeze the supervisor");
    // The worker stays healthy: it extends the fence every 100 ms, always
    // a second ahead, while the supervisor is stopped for 1.5 s (past the
    // first extension) and after it wakes.
    let frozen_until = Instant::now() + Duration::from_millis(1500);
    let give_up = Instant::now() + Duration::from_secs(5);
    let mut woken = false;
    let status = loop {
        if !woken && Instant::now() >= frozen_until {
            kill(pid, Signal::SIGCONT).expect("wake the supervisor");
            woken = true;
        }
        if woken {
            if let Some(status) = child.try_wait().expect("poll the supervisor") {
                break Some(status);
            }
        }
        if Instant::now() >= give_up {
            break None;
        }
        // A write can fail once the supervisor ended the group: its status says how.
        let _ = wire.write_all(&extension(ahead));
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = killpg(pid, Signal::SIGKILL);
    let _ = child.wait();
    let status = status.expect("the supervisor ends once its command has");
    assert_eq!(
        (status.code(), status.signal()),
        (Some(0), None),
        "the command exited 0 within its fence, which the worker kept extending"
    );
}
