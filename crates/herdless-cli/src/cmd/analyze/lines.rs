//! Splitting a byte stream into lines of bounded length, chunk by chunk.
//!
//! A line longer than [`MAX_LINE`] is not buffered whole: its bytes are
//! dropped as they come and the line is reported as too long (a skipped
//! line), so a file with no newline at all costs one buffer, not its size.
//! A partial last line is kept until more bytes arrive ([`Lines::feed`]) or
//! the input ends ([`Lines::finish`]); `\r\n` endings are accepted.

/// The longest line read: 1 MiB.
pub(crate) const MAX_LINE: usize = 1 << 20;

/// The state between chunks.
#[derive(Debug, Default)]
pub(crate) struct Lines {
    buf: Vec<u8>,
    too_long: bool,
}

fn trim(l: &[u8]) -> &[u8] {
    l.strip_suffix(b"\r").unwrap_or(l)
}

impl Lines {
    /// Calls `f` with every complete line of `chunk` (with what came before
    /// it); `None` for a line longer than [`MAX_LINE`]. Blank lines are skipped.
    pub(crate) fn feed(&mut self, chunk: &[u8], f: &mut impl FnMut(Option<&[u8]>)) {
        let mut rest = chunk;
        while let Some(pos) = rest.iter().position(|&b| b == b'\n') {
            let piece = &rest[..pos];
            if self.too_long || self.buf.len() + piece.len() > MAX_LINE {
                f(None);
            } else if self.buf.is_empty() {
                let l = trim(piece);
                if !l.is_empty() {
                    f(Some(l));
                }
            } else {
                self.buf.extend_from_slice(piece);
                f(Some(trim(&self.buf)));
            }
            self.buf.clear();
            self.too_long = false;
            rest = &rest[pos + 1..];
        }
        if !self.too_long {
            if self.buf.len() + rest.len() > MAX_LINE {
                self.too_long = true;
                self.buf.clear();
            } else {
                self.buf.extend_from_slice(rest);
            }
        }
    }

    /// The last line, when the input ended without a newline.
    pub(crate) fn finish(&mut self, f: &mut impl FnMut(Option<&[u8]>)) {
        if self.too_long {
            f(None);
        } else if !trim(&self.buf).is_empty() {
            f(Some(trim(&self.buf)));
        }
        self.buf.clear();
        self.too_long = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]]) -> Vec<Option<Vec<u8>>> {
        let mut out = Vec::new();
        let mut l = Lines::default();
        let mut f = |x: Option<&[u8]>| out.push(x.map(<[u8]>::to_vec));
        for c in chunks {
            l.feed(c, &mut f);
        }
        l.finish(&mut f);
        out
    }

    #[test]
    fn lines_across_chunks_crlf_blank_and_unterminated() {
        let got = split(&[b"ab", b"c\r\n\nde", b"f\ng"]);
        assert_eq!(
            got,
            vec![
                Some(b"abc".to_vec()),
                Some(b"def".to_vec()),
                Some(b"g".to_vec())
            ]
        );
    }

    #[test]
    fn a_line_past_the_limit_is_dropped_not_buffered() {
        let big = vec![b'x'; MAX_LINE + 10];
        let got = split(&[&big[..MAX_LINE / 2], &big[MAX_LINE / 2..], b"\nok\n"]);
        assert_eq!(got, vec![None, Some(b"ok".to_vec())]);
        let got = split(&[&big]);
        assert_eq!(got, vec![None]);
    }
}
