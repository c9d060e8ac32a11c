//! One attempt: the child in its own process group, its timeout, its signals.
//!
//! # Why a process group
//!
//! A command is rarely one process: `sh -c 'scanimage | convert …'` forks. To end
//! an attempt (timeout, interrupt) without leaving grandchildren behind, the child
//! is started as the leader of a new process group
//! ([`CommandExt::process_group`](std::os::unix::process::CommandExt::process_group))
//! and every signal herdless sends goes to the whole group (`killpg`).
//!
//! # Ending a group
//!
//! [`end_group`] sends `SIGTERM` (and `SIGCONT`, so a stopped process can act on
//! it) to the group, waits up to the grace period (`--kill-after`) for the child
//! *and every other member* to be gone, then sends `SIGKILL` to whatever is left
//! and reaps the child. Members other than the child cannot be awaited, so "gone"
//! is polled with `killpg(pgid, 0)` every 20 ms during the grace period.
//!
//! A group is ended on timeout, on interrupt, and after a *failed* attempt that
//! left members behind (`sh -c 'work & exit 1'`): a retry re-runs the command from
//! scratch and must not race a leftover of the previous attempt. After a
//! successful attempt the group is left alone (a command may start a daemon).
//!
//! # Orphans
//!
//! On Linux herdless makes itself a *child subreaper* ([`adopt_orphans`]): a
//! grandchild whose parent exits is re-parented to herdless rather than to PID 1,
//! and herdless reaps the exited members of an attempt's group ([`reap_group`]).
//! Without it, a dead grandchild stays a zombie member of the group wherever PID 1
//! does not reap (containers without an init), and the group would look alive for
//! the whole grace period.
//!
//! # The terminal
//!
//! A process group that is not the terminal's foreground group is stopped
//! (`SIGTTIN`) when it reads the terminal. When the attempt's stdin is the
//! terminal and herdless's group is in the foreground, herdless hands the
//! foreground to the child's group for the attempt (`tcsetpgrp`, then `SIGCONT` in
//! case the child already tried to read) and takes it back afterwards, with
//! `SIGTTOU` blocked in its own thread for that call as POSIX requires of a
//! background caller. While the child holds the terminal, Ctrl-C reaches the
//! child's group directly rather than herdless; a child that dies of `SIGINT` or
//! `SIGQUIT` then is taken as the user's interrupt (as shells do), not as a
//! retryable failure.
//!
//! Job control follows the terminal: when Ctrl-Z stops the child's group,
//! herdless ([`Foreground::suspend`]) takes the terminal back and stops itself, so
//! the shell regains control; on `fg` it hands the terminal to the child's group
//! again and continues it.

use std::io;
use std::os::fd::AsFd;
use std::os::unix::process::ExitStatusExt;
use std::process::ExitStatus;
use std::time::Duration;

use nix::sys::signal::{SigSet, SigmaskHow, Signal, killpg};
use nix::unistd::{Pid, getpgrp, tcgetpgrp, tcsetpgrp};
use tokio::process::Child;
use tokio::time::Instant;

/// How often the rest of a group is checked during the grace period.
const GROUP_POLL: Duration = Duration::from_millis(20);

/// How long a group killed with `SIGKILL` is given to be reaped.
const KILL_REAP: Duration = Duration::from_secs(1);

/// Makes herdless the reaper of its descendants' orphans (Linux; elsewhere a
/// no-op), so that [`reap_group`] can empty an attempt's group.
pub(crate) fn adopt_orphans() {
    #[cfg(target_os = "linux")]
    let _ = nix::sys::prctl::set_child_subreaper(true);
}

/// Reaps every exited member of group `pgid` that is herdless's child (adopted
/// orphans). Call only once the group's leader has been reaped by tokio, so its
/// status is not taken from it.
pub(crate) fn reap_group(pgid: Pid) {
    use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
    loop {
        match waitid(Id::PGid(pgid), WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG) {
            Ok(WaitStatus::StillAlive) | Err(_) => break,
            Ok(_) => continue,
        }
    }
}

/// Whether any process of group `pgid` still exists (zombies included).
pub(crate) fn group_alive(pgid: Pid) -> bool {
    killpg(pgid, None).is_ok()
}

/// Whether the group still has members once its exited members are reaped.
/// Only after the leader has been reaped.
pub(crate) fn group_remains(pgid: Pid) -> bool {
    reap_group(pgid);
    group_alive(pgid)
}

/// Sends `signal` to the group, ignoring a group that is already gone.
pub(crate) fn signal_group(pgid: Pid, signal: Signal) {
    let _ = killpg(pgid, signal);
}

/// Ends the group led by `child`: `SIGTERM`, up to `grace` for every member to
/// exit, then `SIGKILL`. Returns the child's status (reaped).
pub(crate) async fn end_group(
    pgid: Pid,
    child: &mut Child,
    grace: Duration,
) -> io::Result<ExitStatus> {
    signal_group(pgid, Signal::SIGTERM);
    signal_group(pgid, Signal::SIGCONT);
    // A grace too large to add to the clock is as good as "wait for the child".
    let deadline = Instant::now()
        .checked_add(grace)
        .unwrap_or_else(|| Instant::now() + Duration::from_secs(100 * 365 * 86_400));
    let mut status = tokio::time::timeout_at(deadline, child.wait())
        .await
        .ok()
        .transpose()?;
    // The child is reaped (or the grace is over): wait for the rest of the group.
    while status.is_some() && group_remains(pgid) && Instant::now() < deadline {
        tokio::time::sleep(GROUP_POLL).await;
    }
    if status.is_none() || group_alive(pgid) {
        signal_group(pgid, Signal::SIGKILL);
    }
    if status.is_none() {
        status = Some(child.wait().await?);
    }
    // SIGKILL cannot be ignored; reap what it ended (bounded, in case a member
    // is not ours to reap).
    let killed = Instant::now() + KILL_REAP;
    while group_remains(pgid) && Instant::now() < killed {
        tokio::time::sleep(GROUP_POLL).await;
    }
    Ok(status.unwrap_or_else(|| ExitStatus::from_raw(0)))
}

/// The exit status as a shell shows it: the code, or 128 + the signal number.
pub(crate) fn shell_status(status: ExitStatus) -> i32 {
    match (status.code(), status.signal()) {
        (Some(code), _) => code,
        (None, Some(sig)) => 128 + sig,
        (None, None) => 128,
    }
}

/// The terminal's foreground, handed to an attempt's group and taken back.
#[derive(Debug)]
pub(crate) struct Foreground {
    ours: Pid,
}

impl Foreground {
    /// When stdin is a terminal whose foreground group is herdless's: hands the
    /// terminal to `pgid`, and wakes the group in case it already read it.
    pub(crate) fn hand_to(pgid: Pid) -> Option<Foreground> {
        let stdin = io::stdin();
        let ours = getpgrp();
        match tcgetpgrp(stdin.as_fd()) {
            Ok(fg) if fg == ours => {}
            _ => return None,
        }
        tcsetpgrp(stdin.as_fd(), pgid).ok()?;
        signal_group(pgid, Signal::SIGCONT);
        Some(Foreground { ours })
    }

    /// Whether the child `pid` is stopped (Ctrl-Z, `SIGTTIN`…), without reaping
    /// or consuming anything (`WNOWAIT`).
    pub(crate) fn child_stopped(pid: Pid) -> bool {
        use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
        matches!(
            waitid(
                Id::Pid(pid),
                WaitPidFlag::WSTOPPED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT
            ),
            Ok(WaitStatus::Stopped(..))
        )
    }

    /// The child's group was stopped while holding the terminal: take the
    /// terminal back, stop herdless too (the shell sees the job stopped), and on
    /// `SIGCONT` give the terminal back to the group and continue it.
    pub(crate) fn suspend(&self, pgid: Pid) {
        self.take_back();
        // Consume the stop report so the next stop is seen afresh.
        {
            use nix::sys::wait::{Id, WaitPidFlag, waitid};
            let _ = waitid(Id::PGid(pgid), WaitPidFlag::WSTOPPED | WaitPidFlag::WNOHANG);
        }
        let _ = nix::sys::signal::raise(Signal::SIGTSTP);
        // Continued (`fg` or `bg`): give the terminal back only if ours again.
        let stdin = io::stdin();
        if tcgetpgrp(stdin.as_fd()).is_ok_and(|fg| fg == self.ours) {
            let _ = tcsetpgrp(stdin.as_fd(), pgid);
        }
        signal_group(pgid, Signal::SIGCONT);
    }

    /// Takes the terminal back for herdless's group.
    pub(crate) fn restore(self) {
        self.take_back();
    }

    fn take_back(&self) {
        let mut ttou = SigSet::empty();
        ttou.add(Signal::SIGTTOU);
        let old = ttou.thread_swap_mask(SigmaskHow::SIG_BLOCK);
        let _ = tcsetpgrp(io::stdin().as_fd(), self.ours);
        if let Ok(old) = old {
            let _ = old.thread_set_mask();
        }
    }
}
