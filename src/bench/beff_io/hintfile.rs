//! b_eff_io's per-pattern hints file (`-i FILE`).
//!
//! One rule per line, `#` comment lines and blank lines ignored:
//!
//! ```text
//! [proc_num] access pattern_type chunk_size key value
//! ```
//!
//! * `proc_num` (optional): `all` or one of the partition sizes;
//! * `access`: `all`, `write`, `rewrite` or `read`;
//! * `pattern_type`: `all`, `scatter`, `shared`, `separated`, `segmented` or `seg_coll`;
//! * `chunk_size`: `on_open` (hint given when the type's file is opened), `all`
//!   (on open and before every pattern), `Lmax`, or one of the chunk sizes
//!   1024, 1032, 32768, 32776, 1048576, 1048584 (before the patterns with that l);
//! * `key`: an `MPI_Info` key (at most 255 characters, no white space);
//! * `value`: the rest of the line, trailing white space removed.
//!
//! The six-field form is release 2.1's; the five-field form leaves out `proc_num`
//! (= `all`). A line is read as six fields when its first four words are valid as
//! `proc_num access pattern_type chunk_size`, otherwise as five. Later lines win
//! over earlier ones on the same key.

use piotwin_types::Hints;

use super::BeffIoError;
use super::schedule::{KIB, MIB, Pass, PatternDef, PatternType, Size};

/// Longest `MPI_Info` key (`MPI_MAX_INFO_KEY`).
const MAX_INFO_KEY: usize = 255;
/// The fixed chunk sizes a rule may name.
const CHUNKS: [u64; 6] = [KIB, KIB + 8, 32 * KIB, 32 * KIB + 8, MIB, MIB + 8];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    OnOpen,
    All,
    Lmax,
    Bytes(u64),
}

/// One line of the file.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Rule {
    partition: Option<usize>,
    pass: Option<Pass>,
    ptype: Option<PatternType>,
    chunk: Chunk,
    key: String,
    value: String,
}

/// The parsed hints file: what to give at open and before each pattern.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PatternHints {
    rules: Vec<Rule>,
}

fn parse_pass(s: &str) -> Option<Option<Pass>> {
    match s {
        "all" => Some(None),
        _ => Pass::ALL.into_iter().find(|p| p.name() == s).map(Some),
    }
}

fn parse_type(s: &str) -> Option<Option<PatternType>> {
    match s {
        "all" => Some(None),
        _ => PatternType::from_name(s).map(Some),
    }
}

fn parse_chunk(s: &str) -> Option<Chunk> {
    match s {
        "on_open" => Some(Chunk::OnOpen),
        "all" => Some(Chunk::All),
        "Lmax" => Some(Chunk::Lmax),
        _ => s
            .parse()
            .ok()
            .filter(|b| CHUNKS.contains(b))
            .map(Chunk::Bytes),
    }
}

/// Splits off the first white-space-separated word.
fn word(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    if s.is_empty() {
        return None;
    }
    let end = s.find([' ', '\t']).unwrap_or(s.len());
    Some((&s[..end], &s[end..]))
}

/// The text after the first `k` words, trimmed.
fn after_words(line: &str, k: usize) -> &str {
    let mut r = line;
    for _ in 0..k {
        r = word(r).map_or("", |(_, r)| r);
    }
    r.trim()
}

impl PatternHints {
    /// Parses the text of a hints file named `file` for a run over `partitions`.
    pub fn parse(
        text: &str,
        file: &str,
        partitions: &[usize],
    ) -> Result<PatternHints, BeffIoError> {
        let mut rules = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = raw.trim_end();
            if line.trim_start().is_empty() || line.starts_with('#') {
                continue;
            }
            let err = |reason: String| BeffIoError::HintsFile {
                file: file.to_string(),
                line: i + 1,
                reason,
            };
            let mut words = Vec::new();
            let mut rest = line;
            while words.len() < 6 {
                let Some((w, r)) = word(rest) else { break };
                words.push(w);
                rest = r;
            }
            let six = words.len() == 6
                && (words[0] == "all" || words[0].parse::<usize>().is_ok())
                && parse_pass(words[1]).is_some()
                && parse_type(words[2]).is_some()
                && parse_chunk(words[3]).is_some();
            if !six && words.len() < 5 {
                return Err(err(format!(
                    "expected `[proc_num] access pattern_type chunk_size key value`, found {} words",
                    words.len()
                )));
            }
            let (proc_word, fields, value) = if six {
                (Some(words[0]), &words[1..5], after_words(line, 5))
            } else {
                (None, &words[0..4], after_words(line, 4))
            };
            let partition = match proc_word {
                None | Some("all") => None,
                Some(w) => {
                    let n: usize = w.parse().map_err(|_| {
                        err(format!("proc_num `{w}`: use `all` or a partition size"))
                    })?;
                    if !partitions.contains(&n) {
                        return Err(err(format!(
                            "proc_num {n} is not one of the partition sizes {partitions:?}; use `all` or one of them"
                        )));
                    }
                    Some(n)
                }
            };
            let pass = parse_pass(fields[0]).ok_or_else(|| {
                err(format!(
                    "access `{}`: allowed are all, write, rewrite, read",
                    fields[0]
                ))
            })?;
            let ptype = parse_type(fields[1]).ok_or_else(|| {
                err(format!(
                    "pattern_type `{}`: allowed are all, scatter, shared, separated, segmented, seg_coll",
                    fields[1]
                ))
            })?;
            let chunk = parse_chunk(fields[2]).ok_or_else(|| {
                err(format!(
                    "chunk_size `{}`: allowed are on_open, all, Lmax, 1024, 1032, 32768, 32776, 1048576, 1048584",
                    fields[2]
                ))
            })?;
            let key = fields[3];
            if key.len() > MAX_INFO_KEY {
                return Err(err(format!(
                    "key `{key}` is longer than MPI_MAX_INFO_KEY = {MAX_INFO_KEY} characters"
                )));
            }
            if value.is_empty() {
                return Err(err(format!("key `{key}` has no value")));
            }
            rules.push(Rule {
                partition,
                pass,
                ptype,
                chunk,
                key: key.to_string(),
                value: value.to_string(),
            });
        }
        Ok(PatternHints { rules })
    }

    fn matching<'a>(
        &'a self,
        n: usize,
        pass: Pass,
        ptype: PatternType,
    ) -> impl Iterator<Item = &'a Rule> + 'a {
        self.rules.iter().filter(move |r| {
            r.partition.is_none_or(|p| p == n)
                && r.pass.is_none_or(|p| p == pass)
                && r.ptype.is_none_or(|t| t == ptype)
        })
    }

    /// Hints for opening the file of `ptype` in `pass` on a partition of `n`
    /// (rules with chunk `on_open` or `all`).
    pub fn open_hints(&self, n: usize, pass: Pass, ptype: PatternType) -> Hints {
        let mut h = Hints::new();
        for r in self
            .matching(n, pass, ptype)
            .filter(|r| matches!(r.chunk, Chunk::OnOpen | Chunk::All))
        {
            h.set(&r.key, &r.value);
        }
        h
    }

    /// Hints to set before pattern `def` (rules with chunk `all`, `Lmax` for the Lmax
    /// patterns, or the pattern's l in bytes).
    pub fn pattern_hints(&self, n: usize, pass: Pass, def: &PatternDef) -> Hints {
        let mut h = Hints::new();
        for r in self.matching(n, pass, def.ptype) {
            let hit = match r.chunk {
                Chunk::OnOpen => false,
                Chunk::All => true,
                Chunk::Lmax => def.l == Size::Lmax,
                Chunk::Bytes(b) => def.l == Size::Bytes(b),
            };
            if hit {
                h.set(&r.key, &r.value);
            }
        }
        h
    }

    /// True when the file has no rules.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::super::schedule::PATTERNS;
    use super::*;

    const TEXT: &str = "\
# proc_num  access  pat_type  chunk_size  info_key            value
       all     all   scatter         all  striping_factor       5
       all     all  separated        all  striping_factor       1
         4   write       all        1024  romio_cb_write  enable
write shared on_open cb_nodes 2
read all Lmax cb_buffer_size 16777216   \t
all all all all access_style read once
";

    #[test]
    fn five_and_six_field_rules() {
        let h = PatternHints::parse(TEXT, "h.txt", &[2, 4]).unwrap();
        let open = h.open_hints(4, Pass::Write, PatternType::Scatter);
        assert_eq!(open.get("striping_factor"), Some("5"));
        assert_eq!(open.get("access_style"), Some("read once"));
        assert_eq!(
            h.open_hints(2, Pass::Write, PatternType::Separated)
                .get("striping_factor"),
            Some("1")
        );
        assert_eq!(
            h.open_hints(2, Pass::Write, PatternType::Shared)
                .get("cb_nodes"),
            Some("2")
        );
        assert_eq!(
            h.open_hints(2, Pass::Read, PatternType::Shared)
                .get("cb_nodes"),
            None
        );
        // Pattern 5 is type 0 with l = 1 KiB; pattern 1 type 0 with l = Lmax.
        let p5 = h.pattern_hints(4, Pass::Write, &PATTERNS[5]);
        assert_eq!(p5.get("romio_cb_write"), Some("enable"));
        assert_eq!(p5.get("striping_factor"), Some("5"));
        assert_eq!(
            h.pattern_hints(2, Pass::Write, &PATTERNS[5])
                .get("romio_cb_write"),
            None
        );
        assert_eq!(
            h.pattern_hints(2, Pass::Read, &PATTERNS[1])
                .get("cb_buffer_size"),
            Some("16777216")
        );
        assert_eq!(
            h.pattern_hints(2, Pass::Read, &PATTERNS[3])
                .get("cb_buffer_size"),
            None
        );
        // on_open rules are not repeated per pattern.
        assert_eq!(
            h.pattern_hints(2, Pass::Write, &PATTERNS[10])
                .get("cb_nodes"),
            None
        );
    }

    #[test]
    fn bad_lines_name_file_line_and_allowed_values() {
        for (text, needle) in [
            ("write scatter 4096 cb_nodes 2\n", "chunk_size `4096`"),
            ("# c\nwrit scatter all cb_nodes 2\n", "access `writ`"),
            ("8 write scatter all cb_nodes 2\n", "proc_num 8"),
            ("write scatter all cb_nodes\n", "found 4 words"),
            ("write scater all cb_nodes 2\n", "pattern_type `scater`"),
        ] {
            let e = PatternHints::parse(text, "h.txt", &[2, 4])
                .unwrap_err()
                .to_string();
            assert!(e.contains("h.txt:"), "{e}");
            assert!(e.contains(needle), "{e} lacks {needle}");
        }
        let e = PatternHints::parse("\n\nread all all k\n", "x", &[1])
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("x:3"), "{e}");
    }
}
