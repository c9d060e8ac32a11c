//! Where `herdless get` writes the body: stdout, or `--output FILE`, as a
//! [`BodySink`] the library streams each attempt's body into.
//!
//! * **stdout** is checked before anything else opens a descriptor: a closed
//!   stdout (`get >&-`) or one open only for reading is an error (exit 1),
//!   never a body silently dropped. (The Rust runtime reopens a closed
//!   stdout on `/dev/null`, for reading and writing, before `main`: that is
//!   what is recognized, so `> /dev/null`, write-only (as shells and Rust's
//!   `Stdio::null()` open it), is fine, while a `/dev/null` opened for
//!   reading and writing (`1<> /dev/null`, Python's `subprocess.DEVNULL`,
//!   `daemon(3)`) is taken for a closed stdout: `--output /dev/null`
//!   discards the body in every case.) The body goes through a duplicate of the descriptor, so
//!   every write error is seen. A pipe or terminal cannot take back what it
//!   was given: an attempt that breaks off after the first byte is not
//!   retried.
//! * **`--output FILE`** is created (or truncated) at start. A regular file
//!   can be started over: a retry after a partial body truncates it first,
//!   so it never holds two attempts' bytes. Anything else (a FIFO,
//!   `/dev/stdout`) is treated as stdout is.
//!
//! Writes go through `tokio::fs::File` (the blocking pool), so a slow reader
//! never blocks the runtime: the per-attempt timeout still fires.

use std::io::{self, SeekFrom};
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};

use herdless::adapters::reqwest::BodySink;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use tokio::io::{AsyncSeekExt, AsyncWriteExt};

/// Where the body goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    Stdout,
    File(PathBuf),
}

impl std::fmt::Display for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Target::Stdout => f.write_str("stdout"),
            Target::File(p) => write!(f, "{}", p.display()),
        }
    }
}

/// The body's destination, as a sink.
#[derive(Debug)]
pub(crate) struct BodyOut {
    file: tokio::fs::File,
    target: Target,
    restartable: bool,
    /// Bytes written by the current (or last) attempt.
    written: u64,
}

impl BodyOut {
    /// Stdout, checked to be open for writing.
    pub(crate) fn stdout() -> Result<Self, String> {
        let fd = io::stdout().as_fd().try_clone_to_owned().map_err(|e| {
            format!(
                "stdout is closed ({e}): there is nowhere to write the body; \
                 redirect it or use --output FILE"
            )
        })?;
        let flags =
            fcntl(&fd, FcntlArg::F_GETFL).map_err(|e| format!("cannot inspect stdout: {e}"))?;
        let mode = OFlag::from_bits_truncate(flags) & OFlag::O_ACCMODE;
        if mode == OFlag::O_RDONLY {
            return Err(
                "stdout is open for reading only: there is nowhere to write the body; \
                        redirect it or use --output FILE"
                    .into(),
            );
        }
        let file = std::fs::File::from(fd);
        if mode == OFlag::O_RDWR && is_dev_null(&file) {
            return Err(
                "stdout is closed (or /dev/null opened for reading and writing, which \
                        is how a closed stdout looks once the runtime has reopened it): there \
                        is nowhere to write the body; redirect it, or discard it with \
                        --output /dev/null"
                    .into(),
            );
        }
        Ok(BodyOut {
            file: tokio::fs::File::from_std(file),
            target: Target::Stdout,
            restartable: false,
            written: 0,
        })
    }

    /// `path`, created or truncated now.
    pub(crate) fn file(path: &Path) -> Result<Self, String> {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .map_err(|e| format!("cannot open --output {}: {e}", path.display()))?;
        let restartable = file.metadata().is_ok_and(|m| m.is_file());
        Ok(BodyOut {
            file: tokio::fs::File::from_std(file),
            target: Target::File(path.to_path_buf()),
            restartable,
            written: 0,
        })
    }

    pub(crate) fn target(&self) -> &Target {
        &self.target
    }

    /// Bytes the last attempt wrote.
    pub(crate) fn written(&self) -> u64 {
        self.written
    }
}

/// Whether `file` is `/dev/null`. The Rust runtime reopens a closed stdout
/// (`>&-`) on `/dev/null` for reading and writing before `main`, so that is
/// how a closed stdout looks from here; a shell's `> /dev/null` opens it for
/// writing only.
fn is_dev_null(file: &std::fs::File) -> bool {
    use std::os::unix::fs::{FileTypeExt, MetadataExt};
    match (file.metadata(), std::fs::metadata("/dev/null")) {
        (Ok(ours), Ok(null)) => ours.file_type().is_char_device() && ours.rdev() == null.rdev(),
        _ => false,
    }
}

impl BodySink for BodyOut {
    async fn write(&mut self, chunk: &[u8]) -> io::Result<()> {
        self.file.write_all(chunk).await?;
        self.written = self.written.saturating_add(chunk.len() as u64);
        Ok(())
    }

    fn can_restart(&self) -> bool {
        self.restartable
    }

    async fn restart(&mut self) -> io::Result<()> {
        self.file.flush().await?;
        self.file.set_len(0).await?;
        self.file.seek(SeekFrom::Start(0)).await?;
        self.written = 0;
        Ok(())
    }

    async fn finish(&mut self) -> io::Result<()> {
        self.file.flush().await
    }
}
