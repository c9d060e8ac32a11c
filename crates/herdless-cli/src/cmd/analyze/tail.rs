//! What `analyze --follow` reads: a file followed by name as `tail -F`
//! does, or a stream (standard input, a pipe, a FIFO, `<(cmd)`) read as it
//! comes, never seeked.
//!
//! A file is polled ([`Tail::poll`], every 100 ms in `follow`): its new
//! bytes are read to its end, then its name is looked up again.
//!
//! * **Rotation by rename** (`mv log log.1`, then a new `log`): the name
//!   now holds another file (device and inode). The old one is read to its
//!   end once more (a writer may have appended since), its unterminated
//!   last line closed, and the new one read from its start. While the name
//!   holds nothing (between the rename and the new file) the old file is
//!   kept open and read.
//! * **Truncation** (copytruncate, `> log`): the file is shorter than what
//!   was read, or, when it has grown back past that point within one poll,
//!   the bytes just before it are no longer the last bytes read (up to
//!   [`FINGERPRINT`] of them are kept and compared). Either way it is read
//!   again from its start; the partial line held from before is dropped
//!   with the old content.
//!
//! A stream has no length and cannot seek: `follow` reads it on a thread of
//! its own ([`stream`]) that sends each chunk as it comes and ends at its
//! end, so a signal is seen while a read blocks.

use std::fs::{File, Metadata};
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::{Path, PathBuf};

/// The last bytes read that are kept to tell a file rewritten in place.
pub const FINGERPRINT: usize = 64;

/// What a poll found, besides the bytes it passed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// Nothing but (perhaps) new bytes.
    None,
    /// The file was truncated or rewritten: read again from its start.
    Truncated,
    /// Another file took the name: the old one was read to its end.
    Rotated,
}

/// A file followed by name.
#[derive(Debug)]
pub struct Tail {
    path: PathBuf,
    file: File,
    id: (u64, u64),
    pos: u64,
    tail: Vec<u8>,
    buf: Vec<u8>,
}

fn id(m: &Metadata) -> (u64, u64) {
    (m.dev(), m.ino())
}

impl Tail {
    /// Opens `path` (a regular file) from its start.
    ///
    /// # Errors
    ///
    /// It cannot be opened.
    pub fn open(path: &Path) -> io::Result<Tail> {
        let file = File::open(path)?;
        let id = id(&file.metadata()?);
        Ok(Tail {
            path: path.to_owned(),
            file,
            id,
            pos: 0,
            tail: Vec::new(),
            buf: vec![0; 1 << 16],
        })
    }

    /// Reads what is new, passing each chunk to `chunk` (and telling it of a
    /// truncation or rotation before the bytes that follow it, so a partial
    /// line can be dropped or closed).
    ///
    /// # Errors
    ///
    /// A read error on the open file (a name that holds nothing is not one).
    pub fn poll(&mut self, chunk: &mut impl FnMut(Change, &[u8])) -> io::Result<()> {
        self.drain(chunk)?;
        let Ok(named) = std::fs::metadata(&self.path) else {
            return Ok(());
        };
        if id(&named) == self.id {
            return Ok(());
        }
        // Rotated: whatever reached the old file since, then the new one.
        self.drain(chunk)?;
        let Ok(file) = File::open(&self.path) else {
            return Ok(());
        };
        self.id = id(&file.metadata()?);
        self.file = file;
        self.pos = 0;
        self.tail.clear();
        chunk(Change::Rotated, &[]);
        self.drain(chunk)
    }

    /// Reads the open file from `pos` to its end, checking before each read
    /// that it was not truncated or rewritten (a writer may do so between
    /// two reads).
    fn drain(&mut self, chunk: &mut impl FnMut(Change, &[u8])) -> io::Result<()> {
        loop {
            let len = self.file.metadata()?.len();
            if len < self.pos || !self.same_before(len)? {
                self.pos = 0;
                self.tail.clear();
                chunk(Change::Truncated, &[]);
            }
            self.file.seek(SeekFrom::Start(self.pos))?;
            let n = match self.file.read(&mut self.buf) {
                Ok(0) => return Ok(()),
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            self.pos += n as u64;
            let got = &self.buf[..n];
            let keep = got.len().min(FINGERPRINT);
            let drop = (self.tail.len() + keep).saturating_sub(FINGERPRINT);
            self.tail.drain(..drop.min(self.tail.len()));
            self.tail.extend_from_slice(&got[got.len() - keep..]);
            chunk(Change::None, got);
        }
    }

    /// Whether the bytes before `pos` are still the last ones read (a file
    /// of at least `len` bytes).
    fn same_before(&self, len: u64) -> io::Result<bool> {
        if self.tail.is_empty() || len < self.pos {
            return Ok(true);
        }
        let mut now = vec![0; self.tail.len()];
        let at = self.pos - self.tail.len() as u64;
        match self.file.read_exact_at(&mut now, at) {
            Ok(()) => Ok(now == self.tail),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// Whether `path` is to be read as a stream: `-`, or anything but a
/// regular file (a FIFO, `<(cmd)`, a character device).
pub fn is_stream(path: &Path) -> bool {
    path.as_os_str() == "-" || std::fs::metadata(path).is_ok_and(|m| !m.is_file())
}

/// Reads `path` (`-`: standard input) on a thread of its own, sending each
/// chunk as it comes; the channel closes at the end of the stream, or with
/// the read error.
pub fn stream(path: PathBuf) -> tokio::sync::mpsc::Receiver<io::Result<Vec<u8>>> {
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    std::thread::spawn(move || {
        let mut reader: Box<dyn Read> = if path.as_os_str() == "-" {
            Box::new(io::stdin())
        } else {
            match File::open(&path) {
                Ok(f) => Box::new(f),
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            }
        };
        let mut buf = vec![0u8; 1 << 16];
        loop {
            let sent = match reader.read(&mut buf) {
                Ok(0) => return,
                Ok(n) => tx.blocking_send(Ok(buf[..n].to_vec())),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            };
            if sent.is_err() {
                return;
            }
        }
    });
    rx
}
