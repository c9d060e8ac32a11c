//! What each attempt reads on its standard input (`--stdin`).
//!
//! A retried command must see the same input on every attempt, or a retry is not
//! a retry. What herdless can promise depends on what its own stdin is, so the
//! default (`auto`) looks:
//!
//! | herdless's stdin | every attempt gets |
//! |---|---|
//! | a terminal | the terminal (a live source: each attempt reads afresh) |
//! | empty: `/dev/null`, another character device, an empty file, closed | the same (nothing to lose) |
//! | a regular file | the file, rewound to where herdless found it before each attempt |
//! | a pipe or socket (data) | a replay: herdless first reads it to the end into an unlinked temporary file, then gives each attempt that file from its start |
//!
//! The replay is what makes `producer | herdless exec -- consumer` correct: the
//! first attempt may have consumed any part of a stream that cannot be rewound.
//! Its cost: the command starts only when the producer has finished, and the data
//! is held on disk (in `$TMPDIR`). For an endless or streaming producer choose
//! `--stdin first` (the stream goes to the first attempt only; later attempts
//! read `/dev/null`, so a retry sees no input) or `--stdin null`.

use std::fs::File;
use std::io::{self, IsTerminal, Seek, SeekFrom};
use std::os::fd::AsFd;
use std::process::Stdio;

use clap::ValueEnum;

/// `--stdin` modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub(crate) enum StdinMode {
    /// Terminal, empty input or a regular file: every attempt; a pipe: replayed.
    #[default]
    Auto,
    /// Passed as is to the first attempt only; later attempts read /dev/null.
    First,
    /// Every attempt reads /dev/null.
    Null,
}

/// The resolved source of each attempt's stdin.
#[derive(Debug)]
pub(crate) enum StdinSource {
    /// Inherit herdless's stdin (terminal, empty, or `first` on attempt 1).
    Inherit {
        /// Only attempt 1 inherits; later attempts get `/dev/null`.
        first_only: bool,
        /// Whether it is a terminal.
        terminal: bool,
    },
    /// A seekable file, rewound to `offset` before each attempt (a regular file
    /// or the replay spool).
    Rewind {
        /// The file.
        file: File,
        /// Where each attempt starts reading.
        offset: u64,
    },
    /// `/dev/null` for every attempt.
    Null,
}

impl StdinSource {
    /// Inspects herdless's own stdin and applies `mode` (spooling a pipe for
    /// `auto`).
    ///
    /// # Errors
    ///
    /// Stdin could not be inspected or read, or the replay file could not be
    /// created or written; the message says which.
    pub(crate) fn open(mode: StdinMode) -> io::Result<Self> {
        Self::open_inner(mode).map_err(|e| match e.get_ref() {
            Some(inner) if inner.is::<Context>() => e,
            _ => context(e, "cannot read stdin"),
        })
    }

    fn open_inner(mode: StdinMode) -> io::Result<Self> {
        let stdin = io::stdin();
        let terminal = stdin.is_terminal();
        let owned = match stdin.as_fd().try_clone_to_owned() {
            Ok(fd) => File::from(fd),
            // stdin is closed: the child gets /dev/null rather than a stray fd 0.
            Err(e) if e.raw_os_error() == Some(nix::errno::Errno::EBADF as i32) => {
                return Ok(StdinSource::Null);
            }
            // Anything else (out of descriptors…): not "no input".
            Err(e) => return Err(e),
        };
        match mode {
            StdinMode::Null => return Ok(StdinSource::Null),
            StdinMode::First => {
                return Ok(StdinSource::Inherit {
                    first_only: true,
                    terminal,
                });
            }
            StdinMode::Auto => {}
        }
        if terminal {
            return Ok(StdinSource::Inherit {
                first_only: false,
                terminal,
            });
        }
        let meta = owned.metadata()?;
        let ft = meta.file_type();
        if ft.is_file() {
            let mut file = owned;
            let offset = file.stream_position()?;
            if offset >= meta.len() {
                return Ok(StdinSource::Null);
            }
            return Ok(StdinSource::Rewind { file, offset });
        }
        use std::os::unix::fs::FileTypeExt;
        if ft.is_char_device() || ft.is_block_device() {
            return Ok(StdinSource::Inherit {
                first_only: false,
                terminal,
            });
        }
        // A pipe, FIFO or socket: replay it.
        let dir = std::env::temp_dir();
        let mut spool = tempfile_in_tmp().map_err(|e| {
            context(
                e,
                &format!(
                    "cannot create the file that replays stdin to every attempt in {} \
                     ($TMPDIR; or pass --stdin first or null)",
                    dir.display()
                ),
            )
        })?;
        let n = spool_all(owned, &mut spool)?;
        if n == 0 {
            return Ok(StdinSource::Null);
        }
        Ok(StdinSource::Rewind {
            file: spool,
            offset: 0,
        })
    }

    /// The child's stdin for attempt `n` (1-based), and whether it is the terminal.
    ///
    /// # Errors
    ///
    /// Rewinding or duplicating the file failed.
    pub(crate) fn for_attempt(&mut self, n: u32) -> io::Result<(Stdio, bool)> {
        match self {
            StdinSource::Inherit {
                first_only,
                terminal,
            } => {
                if *first_only && n > 1 {
                    Ok((Stdio::null(), false))
                } else {
                    Ok((Stdio::inherit(), *terminal))
                }
            }
            StdinSource::Rewind { file, offset } => {
                file.seek(SeekFrom::Start(*offset))?;
                Ok((Stdio::from(file.try_clone()?), false))
            }
            StdinSource::Null => Ok((Stdio::null(), false)),
        }
    }
}

/// Copies `source` to the end into `spool`, saying which side failed.
fn spool_all(mut source: File, spool: &mut File) -> io::Result<u64> {
    use std::io::{Read, Write};
    let mut buf = vec![0u8; 64 * 1024];
    let mut total = 0u64;
    loop {
        let n = match source.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(context(e, "cannot read stdin")),
        };
        spool
            .write_all(&buf[..n])
            .map_err(|e| context(e, "cannot write the file that replays stdin"))?;
        total += n as u64;
    }
}

/// An error with what herdless was doing; the kind is kept.
#[derive(Debug)]
struct Context {
    what: String,
    error: io::Error,
}

impl std::fmt::Display for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.error)
    }
}

impl std::error::Error for Context {}

fn context(error: io::Error, what: &str) -> io::Error {
    io::Error::new(
        error.kind(),
        Context {
            what: what.to_owned(),
            error,
        },
    )
}

/// An unlinked temporary file: gone from the file system once herdless exits.
fn tempfile_in_tmp() -> io::Result<File> {
    tempfile::tempfile()
}
