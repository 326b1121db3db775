//! Option types every benchmark's command line shares: an option error that
//! names the option, the value and what is allowed; sizes in IOR's style.

/// An error in a benchmark's options: names the option, the value and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionError {
    /// The option, e.g. `-t`.
    pub option: String,
    /// The value given.
    pub value: String,
    /// What is wrong and what is allowed.
    pub reason: String,
}

impl std::fmt::Display for OptionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.value.as_str() {
            "" => write!(f, "{}: {}", self.option, self.reason),
            value => write!(f, "{} `{value}`: {}", self.option, self.reason),
        }
    }
}

impl std::error::Error for OptionError {}

/// An [`OptionError`] for `option` given `value`.
pub fn opt_err(option: &str, value: impl ToString, reason: impl Into<String>) -> OptionError {
    OptionError {
        option: option.into(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

/// A size that is not one (the text says why and what is allowed).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SizeError(pub String);

/// Parses a size the way IOR does: a whole number of bytes with an optional unit
/// `k`, `m`, `g`, `t` (powers of 1024; `K`, `KiB`, `kb` … mean the same).
/// Zero, negative and overflowing sizes are refused.
pub fn parse_size(text: &str) -> Result<u64, SizeError> {
    let t = text.trim();
    let allowed = "use a whole number of bytes with an optional unit k, m, g or t (powers of 1024), e.g. 4k, 1m, 2g";
    if t.starts_with('-') {
        return Err(SizeError(format!("sizes must be positive; {allowed}")));
    }
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (digits, unit) = t.split_at(split);
    if digits.is_empty() {
        return Err(SizeError(format!("not a size; {allowed}")));
    }
    let shift = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => return Err(SizeError(format!("unknown unit `{unit}`; {allowed}"))),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| SizeError(format!("too large; {allowed}")))?;
    if n == 0 {
        return Err(SizeError(format!(
            "sizes must be at least 1 byte; {allowed}"
        )));
    }
    n.checked_mul(1u64 << shift)
        .ok_or_else(|| SizeError(format!("too large (over 2^64 bytes); {allowed}")))
}

/// A size in IOR's compact style: `4 MiB`, `256 KiB`, `100 bytes`.
pub fn format_size(bytes: u64) -> String {
    const UNITS: [(u64, &str); 4] = [
        (1 << 40, "TiB"),
        (1 << 30, "GiB"),
        (1 << 20, "MiB"),
        (1 << 10, "KiB"),
    ];
    for (f, u) in UNITS {
        if bytes >= f && bytes.is_multiple_of(f) {
            return format!("{} {}", bytes / f, u);
        }
    }
    for (f, u) in UNITS {
        if bytes >= f {
            return format!("{:.2} {}", bytes as f64 / f as f64, u);
        }
    }
    format!("{bytes} bytes")
}
