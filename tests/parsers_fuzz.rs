//! The input parsers under random input (proptest, a bounded number of cases so it
//! runs in `make test`): the scenario TOML, MPI-IO hints files, b_eff_io `-i`
//! files and NPB's `inputbt.data` (BTIO and the PnetCDF kernel). Each gets
//! arbitrary text and mutations of a valid file (lines dropped, repeated, swapped,
//! values replaced by odd tokens). None may panic, and every rejection must name
//! the input it rejects (the file name given to the parser).

use piotwin::bench::beff_io::hintfile::PatternHints;
use piotwin::bench::btio::input::{parse_kernel, parse_npb};
use piotwin_sim::Scenario;
use piotwin_types::Hints;
use proptest::prelude::*;

/// Odd tokens a mutation puts in place of a value.
const TOKENS: &[&str] = &[
    "",
    "0",
    "-1",
    "1e308",
    "NaN",
    "inf",
    "18446744073709551616",
    "\"",
    "[",
    "]]",
    "=",
    "#",
    "0x10",
    "4k",
    "1GiB",
    "-0",
    "9999999999999999999999",
    "true",
    "\"\\u{0}\"",
    "é",
    "1/0",
    "2GB/s",
    "{",
    "all",
    "Lmax",
    "on_open",
];

/// One edit of a line-based text.
#[derive(Debug, Clone)]
enum Edit {
    Drop(usize),
    Repeat(usize),
    Swap(usize, usize),
    /// Replace the `w`-th whitespace-separated word of a line by a token.
    Word(usize, usize, usize),
    /// Cut a line at a byte position (on a character boundary).
    Cut(usize, usize),
    Insert(usize, String),
}

fn edit() -> impl Strategy<Value = Edit> {
    prop_oneof![
        any::<usize>().prop_map(Edit::Drop),
        any::<usize>().prop_map(Edit::Repeat),
        (any::<usize>(), any::<usize>()).prop_map(|(a, b)| Edit::Swap(a, b)),
        (any::<usize>(), 0..8usize, 0..TOKENS.len()).prop_map(|(l, w, t)| Edit::Word(l, w, t)),
        (any::<usize>(), any::<usize>()).prop_map(|(l, p)| Edit::Cut(l, p)),
        (any::<usize>(), "\\PC{0,40}").prop_map(|(l, s)| Edit::Insert(l, s)),
    ]
}

/// `base` with `edits` applied, line by line.
fn mutate(base: &str, edits: &[Edit]) -> String {
    let mut lines: Vec<String> = base.lines().map(String::from).collect();
    for e in edits {
        if lines.is_empty() {
            lines.push(String::new());
        }
        let n = lines.len();
        match e {
            Edit::Drop(i) => {
                lines.remove(i % n);
            }
            Edit::Repeat(i) => {
                let l = lines[i % n].clone();
                lines.insert(i % n, l);
            }
            Edit::Swap(a, b) => lines.swap(a % n, b % n),
            Edit::Word(i, w, t) => {
                let mut words: Vec<&str> = lines[i % n].split_whitespace().collect();
                if !words.is_empty() {
                    let k = w % words.len();
                    words[k] = TOKENS[*t];
                    lines[i % n] = words.join(" ");
                }
            }
            Edit::Cut(i, p) => {
                let l = &lines[i % n];
                let mut at = p % (l.len() + 1);
                while !l.is_char_boundary(at) {
                    at -= 1;
                }
                lines[i % n] = l[..at].to_string();
            }
            Edit::Insert(i, s) => lines.insert(i % (n + 1), s.clone()),
        }
    }
    lines.join("\n") + "\n"
}

/// A valid file's text and a mutation of it, or arbitrary text.
fn input(base: &'static str) -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::collection::vec(edit(), 1..6).prop_map(move |e| mutate(base, &e)),
        1 => "\\PC{0,200}",
        1 => prop::collection::vec("[ -~]{0,30}", 0..12).prop_map(|l| l.join("\n")),
    ]
}

const SCENARIO: &str = include_str!("../scenarios/default.toml");
const CLUSTER: &str = include_str!("../scenarios/lustre-hdd.toml");
const HINTS: &str =
    "# ROMIO hints\ncb_buffer_size 16777216\nromio_cb_write enable\nstriping_factor 4\n";
const BEFF_HINTS: &str = "# proc_num access pat_type chunk_size info_key value\n\
    all all scatter all striping_factor 5\n\
    all write all 1024 collective_buffering true\n\
    2 read seg_coll Lmax cb_buffer_size 1048576\n\
    all all all on_open access_style read_once\n";
const INPUTBT: &str = "200       = number of time steps\n0.0008d0  = dt\n64 64 64\n\
    5 0       = Write interval and read interval\n2 1048576 = nodes and buffer size\n";
const KERNEL_INPUT: &str = "w\n3\n5\n16 16 16\n./output\n";

/// Where a rejection names its input.
fn names(message: &str, file: &str) -> bool {
    message.contains(file)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 192, ..ProptestConfig::default() })]

    #[test]
    fn scenario_files(text in prop_oneof![input(SCENARIO), input(CLUSTER)]) {
        if let Err(e) = Scenario::from_str(&text, "fuzz.toml") {
            prop_assert!(names(&e.to_string(), "fuzz.toml"), "{e}");
        }
    }

    #[test]
    fn hints_files(text in input(HINTS)) {
        let mut h = Hints::new();
        if let Err(e) = h.parse_file_text(&text, "fuzz.hints") {
            prop_assert!(names(&e.to_string(), "fuzz.hints"), "{e}");
        }
    }

    #[test]
    fn b_eff_io_hints_files(text in input(BEFF_HINTS)) {
        if let Err(e) = PatternHints::parse(&text, "fuzz.info", &[1, 2, 4]) {
            prop_assert!(names(&e.to_string(), "fuzz.info"), "{e}");
        }
    }

    #[test]
    fn inputbt_data(text in input(INPUTBT)) {
        if let Err(e) = parse_npb(&text, "inputbt.data") {
            prop_assert!(names(&e.to_string(), "inputbt.data"), "{e}");
        }
    }

    #[test]
    fn kernel_input_files(text in input(KERNEL_INPUT)) {
        if let Err(e) = parse_kernel(&text, "kernel.in") {
            prop_assert!(names(&e.to_string(), "kernel.in"), "{e}");
        }
    }
}
