//! Which levels `RUST_LOG` enables for the target `herdless`, outside any
//! span: the answer of `tracing-subscriber`'s `EnvFilter` (0.3, parsed
//! lossily), without linking it. `EnvFilter` builds a regex engine for field
//! values, which with its Unicode tables and the relocations they need weighed
//! about 0.9 MB of the binary (docs/performance.md, "Binary size"); the retry
//! events only ask it this one question.
//!
//! The directive syntax and its precedence are `EnvFilter`'s, quirks included:
//! directives are split at every comma; a directive is parsed as
//! `target[span{field=value,…}]=level`; one that does not parse is reported on
//! stderr ("ignoring", the directive in backquotes, the error) and skipped; only directives without a span name
//! and without field values decide an event outside spans, the most specific
//! target (the longest prefix of `herdless`) first, a later directive of the
//! same target and field names replacing an earlier one. A unit test compares
//! the answers with `EnvFilter`'s over thousands of generated values. One
//! difference: a field value that is not a valid regular expression
//! (`herdless[{x=(}]`) is accepted here without a message; such a directive
//! never decided these events either way.

use std::cmp::Ordering;

/// `LevelFilter` as a number: 0 off, 1 error, 2 warn, 3 info, 4 debug, 5 trace.
type LevelFilter = u8;

const INVALID_DIRECTIVE: &str = "invalid filter directive";
const INVALID_LEVEL: &str = "error parsing level filter: expected one of \"off\", \"error\", \
    \"warn\", \"info\", \"debug\", \"trace\", or a number 0-5";

/// Whether ERROR, WARN, INFO, DEBUG and TRACE events of the target `herdless`
/// are enabled by `spec`; directives that do not parse are reported on stderr.
pub(super) fn enabled_for_herdless(spec: &str) -> [bool; 5] {
    enabled(spec, "herdless", |piece, error| {
        eprintln!("ignoring `{piece}`: {error}");
    })
}

/// [`enabled_for_herdless`] for any target, with the reports given to `report`.
pub(super) fn enabled(spec: &str, target: &str, mut report: impl FnMut(&str, &str)) -> [bool; 5] {
    let mut plain = Vec::new();
    let mut with_field_names = Vec::new();
    for piece in spec.split(',').filter(|s| !s.is_empty()) {
        match parse(piece) {
            Ok(d) if d.in_span => {}
            Ok(d) if d.field_values => {}
            Ok(d) if d.static_.field_names.is_empty() => plain.push(d.static_),
            Ok(d) => with_field_names.push(d.static_),
            Err(error) => report(piece, error),
        }
    }
    // EnvFilter's statics: the plain directives, then those naming fields
    // (without values), each inserted in order of specificity, an equal one
    // replaced.
    let mut set: Vec<Static> = Vec::new();
    for d in plain.into_iter().chain(with_field_names) {
        match set.binary_search_by(|x| specificity(x, &d)) {
            Ok(i) => set[i] = d,
            Err(i) => set.insert(i, d),
        }
    }
    // A `tracing::enabled!` hint is not an event: field names are not checked.
    let level = set
        .iter()
        .find(|d| d.target.as_deref().is_none_or(|t| target.starts_with(t)))
        .map_or(0, |d| d.level);
    [1, 2, 3, 4, 5].map(|l| level >= l)
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Static {
    target: Option<String>,
    field_names: Vec<String>,
    level: LevelFilter,
}

struct Directive {
    static_: Static,
    in_span: bool,
    field_values: bool,
}

/// `StaticDirective`'s order: the most specific first.
fn specificity(a: &Static, b: &Static) -> Ordering {
    a.target
        .as_ref()
        .map(String::len)
        .cmp(&b.target.as_ref().map(String::len))
        .then_with(|| a.field_names.len().cmp(&b.field_names.len()))
        .then_with(|| {
            a.target
                .cmp(&b.target)
                .then_with(|| a.field_names[..].cmp(&b.field_names[..]))
        })
        .reverse()
}

/// `LevelFilter::from_str`.
fn level(s: &str) -> Result<LevelFilter, &'static str> {
    if let Ok(n) = s.parse::<usize>() {
        return if n <= 5 {
            Ok(n as LevelFilter)
        } else {
            Err(INVALID_LEVEL)
        };
    }
    let named = ["off", "error", "warn", "info", "debug", "trace"];
    if s.is_empty() {
        return Ok(1);
    }
    match named.iter().position(|n| s.eq_ignore_ascii_case(n)) {
        Some(i) => Ok(i as LevelFilter),
        None => Err(INVALID_LEVEL),
    }
}

/// `LevelFilter::from_str` where a level may also be a target.
fn level_or_target(s: &str) -> (LevelFilter, Option<String>) {
    match s {
        "" => (5, None),
        s => match level(s) {
            Ok(l) => (l, None),
            Err(_) => (5, Some(s.to_owned())),
        },
    }
}

/// `Directive::parse` (env-filter), state for state: the indices are those
/// of the trimmed directive, the slices are of the untrimmed one.
fn parse(from: &str) -> Result<Directive, &'static str> {
    #[derive(Clone, Copy)]
    enum State {
        Start,
        LevelOrTarget { start: usize },
        Span { span_start: usize },
        Field { field_start: usize },
        Fields,
        Target,
        Level { level_start: usize },
        Complete,
    }
    use State::*;
    let mut target = None;
    let mut level_ = 5;
    let mut in_span = false;
    let mut field_names = Vec::new();
    let mut field_values = false;
    let mut field = |s: &str| -> Result<(), &'static str> {
        if s.is_empty() {
            return Err(INVALID_DIRECTIVE);
        }
        let mut parts = s.split('=');
        let name = parts.next().unwrap_or_default();
        if parts.next().is_some() {
            field_values = true;
        } else {
            field_names.push(name.to_owned());
        }
        Ok(())
    };
    let mut state = Start;
    for (i, c) in from.trim().char_indices() {
        state = match (state, c) {
            (Start, '[') => Span { span_start: i + 1 },
            (Start, c) if !['-', ':', '_'].contains(&c) && !c.is_alphanumeric() => {
                return Err(INVALID_DIRECTIVE);
            }
            (Start, _) => LevelOrTarget { start: i },
            (LevelOrTarget { start }, '=') => {
                target = Some(from[start..i].to_owned());
                Level { level_start: i + 1 }
            }
            (LevelOrTarget { start }, '[') => {
                target = Some(from[start..i].to_owned());
                Span { span_start: i + 1 }
            }
            (LevelOrTarget { start }, ',') => {
                (level_, target) = level_or_target(&from[start..]);
                Complete
            }
            (state @ LevelOrTarget { .. }, _) => state,
            (Target, '=') => Level { level_start: i + 1 },
            (Span { .. }, ']') => {
                in_span = true;
                Target
            }
            (Span { span_start }, '{') => {
                in_span = !from[span_start..i].is_empty();
                Field { field_start: i + 1 }
            }
            (state @ Span { .. }, _) => state,
            (Field { field_start }, '}') => {
                field(&from[field_start..i])?;
                Fields
            }
            (Field { field_start }, ',') => {
                field(&from[field_start..i])?;
                Field { field_start: i + 1 }
            }
            (state @ Field { .. }, _) => state,
            (Fields, ']') => Target,
            (Level { level_start }, ',') => {
                level_ = match &from[level_start..i] {
                    "" => 5,
                    l => level(l)?,
                };
                Complete
            }
            (state @ Level { .. }, _) => state,
            _ => return Err(INVALID_DIRECTIVE),
        };
    }
    match state {
        LevelOrTarget { start } => (level_, target) = level_or_target(&from[start..]),
        Level { level_start } => {
            level_ = match &from[level_start..] {
                "" => 5,
                l => level(l)?,
            };
        }
        Target | Complete => {}
        _ => return Err(INVALID_DIRECTIVE),
    }
    Ok(Directive {
        static_: Static {
            target,
            field_names,
            level: level_,
        },
        in_span,
        field_values,
    })
}

#[cfg(test)]
mod tests {
    use super::enabled;
    use tracing::Level;
    use tracing_subscriber::EnvFilter;
    use tracing_subscriber::layer::SubscriberExt;

    /// What `EnvFilter` answers (the code this module replaced).
    fn env_filter(spec: &str) -> [bool; 5] {
        let filter = EnvFilter::builder().parse_lossy(spec);
        let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(filter));
        let mut enabled = [false; 5];
        tracing::dispatcher::with_default(&dispatch, || {
            enabled = [
                tracing::enabled!(target: "herdless", Level::ERROR),
                tracing::enabled!(target: "herdless", Level::WARN),
                tracing::enabled!(target: "herdless", Level::INFO),
                tracing::enabled!(target: "herdless", Level::DEBUG),
                tracing::enabled!(target: "herdless", Level::TRACE),
            ];
        });
        enabled
    }

    fn ours(spec: &str) -> ([bool; 5], Vec<(String, String)>) {
        let mut reports = Vec::new();
        let e = enabled(spec, "herdless", |piece, error| {
            reports.push((piece.to_owned(), error.to_owned()));
        });
        (e, reports)
    }

    /// Each comma-separated piece: rejected with EnvFilter's message, or
    /// accepted as EnvFilter accepts it.
    fn same_reports(spec: &str, reports: &[(String, String)]) {
        for piece in spec.split(',').filter(|s| !s.is_empty()) {
            let theirs = EnvFilter::builder()
                .parse(piece)
                .err()
                .map(|e| e.to_string());
            let mine = reports
                .iter()
                .find(|(p, _)| p == piece)
                .map(|(_, e)| e.clone());
            match theirs {
                // A field value that is not a valid regex: the one difference.
                Some(e) if e.starts_with("invalid field filter") => {}
                theirs => assert_eq!(mine, theirs, "piece {piece:?} of {spec:?}"),
            }
        }
    }

    #[test]
    fn the_documented_forms_answer_as_env_filter() {
        for spec in [
            "off",
            "error",
            "warn",
            "herdless=warn",
            "info,hyper=debug",
            "herdless=error",
            "trace",
            "herd=debug,herdless=off",
            "herdless_sim=trace",
            "herdless[span]=trace",
            "herdless[{attempt}]=debug",
            "herdless[{attempt=3}]=debug",
            "herdless=WARN,herdless=info",
            "3",
            "9",
            "herdless=",
            " herdless=warn",
            "herdless=warn ",
            "info, herdless=error",
            "[]=info",
            "=info",
            "herdless=bogus,warn",
            "{x}",
            "herdless[{x=(}]=debug",
        ] {
            let (mine, reports) = ours(spec);
            assert_eq!(mine, env_filter(spec), "RUST_LOG={spec:?}");
            same_reports(spec, &reports);
        }
    }

    #[test]
    fn generated_values_answer_as_env_filter() {
        const TOKENS: &[&str] = &[
            "herdless",
            "herd",
            "herdless_sim",
            "hyper",
            "h",
            "=",
            "=",
            ",",
            ",",
            "[",
            "]",
            "{",
            "}",
            "warn",
            "WARN",
            "info",
            "off",
            "trace",
            "debug",
            "error",
            "Error",
            "0",
            "3",
            "5",
            "7",
            " ",
            "x",
            "y=1",
            "z=true",
            "::",
            "-",
            "_",
            "é",
            ".",
            "*",
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move |n: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % n as u64) as usize
        };
        for _ in 0..3000 {
            let len = 1 + next(8);
            let spec: String = (0..len).map(|_| TOKENS[next(TOKENS.len())]).collect();
            let (mine, reports) = ours(&spec);
            assert_eq!(mine, env_filter(&spec), "RUST_LOG={spec:?}");
            same_reports(&spec, &reports);
        }
    }
}
