//! `tune --write FILE`: the recommended `[policy.NAME]` table, added to a
//! policy file or replacing the table of that name, everything else kept
//! byte for byte.
//!
//! The file is read as text and cut at table headers (lines that open with
//! `[`, outside multi-line strings, read as TOML does: a quote in a comment or a
//! one-line string opens none): the named table runs from its header to
//! its last key line, with the `# herdless tune:` comment lines just above
//! it (the block's own); blank lines and comments after it stay where they
//! are. A file that defines the table another way (dotted keys, an inline
//! table) is refused, to be edited by hand. A table of that name that reads
//! differently from the block is replaced only with `--force`; one that
//! reads the same is left alone (the file is not touched).
//!
//! The new text is checked before it replaces the file: it must read as a
//! policy file, the table must read back as the recommended policy (with
//! `herdless check`'s own reader), and every other table must read as
//! before. It is written to a temporary file beside the target and renamed
//! over it (atomic on one file system; the target's permissions kept; a
//! symbolic link's target replaced, not the link).

use std::path::{Path, PathBuf};

use herdless::Policy;

use crate::shared::config::{ConfigFile, MAX_FILE_BYTES};
use crate::shared::error::CliError;

/// What `--write` did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Written {
    /// The table was added (the file created if it did not exist).
    Added,
    /// A different table of that name was replaced (`--force`).
    Replaced,
    /// The file already held the same table: it was not touched.
    Unchanged,
}

/// A line's table header: its dotted key, or `None` for `[[array]]`.
fn header(line: &str) -> Option<Option<Vec<String>>> {
    let l = line.trim_start();
    if l.starts_with("[[") {
        return Some(None);
    }
    let mut rest = l.strip_prefix('[')?;
    let mut keys = Vec::new();
    loop {
        rest = rest.trim_start();
        let (key, after) = if let Some(r) = rest.strip_prefix('"') {
            let end = r.find('"')?;
            (r[..end].to_owned(), &r[end + 1..])
        } else if let Some(r) = rest.strip_prefix('\'') {
            let end = r.find('\'')?;
            (r[..end].to_owned(), &r[end + 1..])
        } else {
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-'))
                .unwrap_or(rest.len());
            (rest[..end].to_owned(), &rest[end..])
        };
        keys.push(key);
        let after = after.trim_start();
        if let Some(r) = after.strip_prefix('.') {
            rest = r;
        } else if let Some(r) = after.strip_prefix(']') {
            let r = r.trim_start();
            return (r.is_empty() || r.starts_with('#')).then_some(Some(keys));
        } else {
            return Some(Some(Vec::new()));
        }
    }
}

/// Where the lexer is at a line's end: outside any string, or inside a
/// multi-line basic (`"""`) or literal (`'''`) string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    No,
    Basic,
    Literal,
}

/// How many of `quote` open `b` (at most 5: a closing delimiter with the
/// two quotes TOML lets a multi-line string end with).
fn run(b: &[u8], quote: u8) -> usize {
    b.iter().take(5).take_while(|&&c| c == quote).count()
}

/// Scans one line from `open` as TOML reads it: comments, one-line basic
/// strings (with escapes) and literal strings, multi-line ones opened or
/// closed; returns the state at the line's end.
fn scan(line: &str, mut open: Open) -> Open {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match open {
            Open::Basic if b[i] == b'\\' => i += 2,
            Open::Basic if run(&b[i..], b'"') >= 3 => {
                i += run(&b[i..], b'"');
                open = Open::No;
            }
            Open::Literal if run(&b[i..], b'\'') >= 3 => {
                i += run(&b[i..], b'\'');
                open = Open::No;
            }
            Open::Basic | Open::Literal => i += 1,
            Open::No => match b[i] {
                b'#' => break,
                b'"' if run(&b[i..], b'"') >= 3 => {
                    open = Open::Basic;
                    i += 3;
                }
                b'\'' if run(&b[i..], b'\'') >= 3 => {
                    open = Open::Literal;
                    i += 3;
                }
                b'"' => {
                    i += 1;
                    while i < b.len() && b[i] != b'"' {
                        i += if b[i] == b'\\' { 2 } else { 1 };
                    }
                    i += 1;
                }
                b'\'' => {
                    i += 1;
                    while i < b.len() && b[i] != b'\'' {
                        i += 1;
                    }
                    i += 1;
                }
                _ => i += 1,
            },
        }
    }
    open
}

/// The lines of `text` (each with its ending), and whether each opens a
/// table header; lines inside a multi-line string never do, and quotes in a
/// comment or a one-line string open none.
fn lines(text: &str) -> Vec<(&str, Option<Option<Vec<String>>>)> {
    let mut out = Vec::new();
    let mut open = Open::No;
    for line in text.split_inclusive('\n') {
        let head = if open == Open::No { header(line) } else { None };
        open = scan(line, open);
        out.push((line, head));
    }
    out
}

/// Where `[policy.NAME]` sits in `text`, as a byte range to replace (its
/// own comment lines above it included, what follows its last key line
/// excluded).
fn span(text: &str, name: &str) -> Option<(usize, usize)> {
    let ls = lines(text);
    let want = vec!["policy".to_owned(), name.to_owned()];
    let at = ls
        .iter()
        .position(|(_, h)| h.as_ref() == Some(&Some(want.clone())))?;
    let offset = |i: usize| ls[..i].iter().map(|(l, _)| l.len()).sum::<usize>();
    let mut start = at;
    while start > 0 && ls[start - 1].0.trim_start().starts_with("# herdless tune:") {
        start -= 1;
    }
    let next = ls[at + 1..]
        .iter()
        .position(|(_, h)| h.is_some())
        .map_or(ls.len(), |i| at + 1 + i);
    let mut end = next;
    while end > at + 1 {
        let l = ls[end - 1].0.trim();
        if l.is_empty() || l.starts_with('#') {
            end -= 1;
        } else {
            break;
        }
    }
    Some((offset(start), offset(end)))
}

/// Every table but `policy.NAME`, as TOML reads them.
fn others(text: &str, name: &str) -> Result<toml::Table, String> {
    let mut t: toml::Table = toml::from_str(text).map_err(|e| e.message().to_owned())?;
    if let Some(toml::Value::Table(p)) = t.get_mut("policy") {
        p.remove(name);
        if p.is_empty() {
            t.remove("policy");
        }
    }
    Ok(t)
}

/// The named table of `text`, as TOML reads it.
fn table(text: &str, name: &str) -> Option<toml::Value> {
    let t: toml::Table = toml::from_str(text).ok()?;
    t.get("policy")?.get(name).cloned()
}

/// The file `file` names: its target when it is a symbolic link.
fn target(file: &Path) -> PathBuf {
    std::fs::canonicalize(file).unwrap_or_else(|_| file.to_owned())
}

/// Adds or replaces `[policy.NAME]` in `file` with `block`, which reads as
/// `policy`; see the [module documentation](self).
///
/// # Errors
///
/// A usage error (exit 2) naming the file: it cannot be read or is not a
/// policy file, it holds a different table of that name (without `force`)
/// or defines it another way, the result does not read back, or it cannot
/// be written.
pub(crate) fn write(
    file: &Path,
    name: &str,
    block: &str,
    policy: &Policy,
    force: bool,
) -> Result<Written, CliError> {
    let shown = file.display();
    let fail = |m: String| CliError::usage(format!("--write {shown}: {m}"));
    let path = target(file);
    let old = match std::fs::metadata(&path) {
        Ok(m) if m.len() > MAX_FILE_BYTES as u64 => {
            return Err(fail("larger than a policy file may be".into()));
        }
        Ok(_) => {
            std::fs::read_to_string(&path).map_err(|e| fail(format!("cannot read it: {e}")))?
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(fail(format!("cannot read it: {e}"))),
    };
    let read = ConfigFile::parse(file, &old)
        .map_err(|e| fail(format!("not a policy file, left as it is: {e}")))?;
    let crlf = old.contains("\r\n");
    let block = if crlf {
        block.replace('\n', "\r\n")
    } else {
        block.to_owned()
    };
    let (new, written) = match span(&old, name) {
        Some((from, to)) => {
            if table(&old, name) == table(&block, name) {
                return Ok(Written::Unchanged);
            }
            if !force {
                return Err(fail(format!(
                    "it already has a different [policy.{name}]: pass --force to replace it, or \
                     --name another name"
                )));
            }
            (
                format!("{}{block}{}", &old[..from], &old[to..]),
                Written::Replaced,
            )
        }
        None if read.policies.contains_key(name) => {
            return Err(fail(format!(
                "it defines policy.{name} without a [policy.{name}] header (dotted keys or an \
                 inline table): replace it by hand"
            )));
        }
        None => {
            let eol = if crlf { "\r\n" } else { "\n" };
            let sep = match () {
                () if old.is_empty() => String::new(),
                () if old.ends_with('\n') => eol.to_owned(),
                () => format!("{eol}{eol}"),
            };
            (format!("{old}{sep}{block}"), Written::Added)
        }
    };
    if others(&new, name) != others(&old, name) {
        return Err(fail(
            "internal error: the other tables would not read as before; left as it is".into(),
        ));
    }
    replace(&path, &new, name, policy).map_err(fail)?;
    Ok(written)
}

/// Writes `text` beside `path`, checks it reads back with `name` as
/// `policy`, and renames it over `path` (keeping `path`'s permissions).
fn replace(path: &Path, text: &str, name: &str, policy: &Policy) -> Result<(), String> {
    use std::io::Write as _;
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".herdless-tune-")
        .suffix(".toml")
        .tempfile_in(dir)
        .map_err(|e| format!("cannot create a file in {}: {e}", dir.display()))?;
    tmp.write_all(text.as_bytes())
        .and_then(|()| tmp.as_file().sync_all())
        .map_err(|e| format!("cannot write {}: {e}", tmp.path().display()))?;
    super::reads_back(tmp.path(), name, policy)?;
    if let Ok(m) = std::fs::metadata(path) {
        std::fs::set_permissions(tmp.path(), m.permissions())
            .map_err(|e| format!("cannot keep its permissions: {e}"))?;
    }
    tmp.persist(path)
        .map_err(|e| format!("cannot replace it: {}", e.error))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_are_read_as_toml_writes_them() {
        let k = |v: &[&str]| Some(Some(v.iter().map(|s| (*s).to_owned()).collect()));
        assert_eq!(header("[policy.tuned]\n"), k(&["policy", "tuned"]));
        assert_eq!(header("  [ policy . \"a.b\" ]  # x"), k(&["policy", "a.b"]));
        assert_eq!(header("['policy'.x]"), k(&["policy", "x"]));
        assert_eq!(header("[[policy]]"), Some(None));
        assert_eq!(header("base = \"1s\""), None);
    }

    #[test]
    fn the_span_is_the_table_and_its_own_comment() {
        let text = "# top\n[policy.a]\nbase = \"1s\"\n\n# b's comment\n[policy.b]\ncap = \"2s\"\n";
        let (from, to) = span(text, "a").unwrap();
        assert_eq!(&text[from..to], "[policy.a]\nbase = \"1s\"\n");
        let text = "# herdless tune: old\n[policy.t]\nbase = \"1s\"\ns = '''\n[policy.x]\n'''\n";
        let (from, to) = span(text, "t").unwrap();
        assert_eq!(from, 0);
        assert_eq!(to, text.len());
        assert_eq!(span(text, "x"), None);
    }

    #[test]
    fn quotes_open_a_multi_line_string_only_outside_comments_and_strings() {
        assert_eq!(scan("# a \"\"\" note\n", Open::No), Open::No);
        assert_eq!(
            scan("k = \"a \\\" \\\"\\\"\\\"\" # \"\"\"\n", Open::No),
            Open::No
        );
        assert_eq!(scan("k = '\"\"\"' \n", Open::No), Open::No);
        assert_eq!(scan("k = \"\"\"\n", Open::No), Open::Basic);
        assert_eq!(
            scan("ends \\\"\"\" here \"\"\"\"\"\n", Open::Basic),
            Open::No
        );
        assert_eq!(scan("k = '''a''' # '''\n", Open::No), Open::No);
        assert_eq!(scan("k = '''\n", Open::No), Open::Literal);
        assert_eq!(
            scan("\"\"\" # still inside\n", Open::Literal),
            Open::Literal
        );
    }
}
