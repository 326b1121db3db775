//! Quantities with units, as scenario files write them: sizes (`"4MiB"`, `"1GB"`),
//! data rates (`"200MB/s"`, `"1.5GiB/s"`, `"10Gb/s"` — a lower-case `b` is bits),
//! times (`"5ms"`, `"20us"`, `"1s"`) and compute rates (`"2.5Gflop/s"`).
//!
//! Binary prefixes (`Ki`, `Mi`, `Gi`, `Ti`, `Pi`) are powers of 1024, decimal ones
//! (`k`/`K`, `M`, `G`, `T`, `P`) powers of 1000 (IEC 80000-13). Sizes are parsed
//! exactly: `"1.5KiB"` is 1536 bytes, `"1.3B"` is an error.

/// Why a quantity did not parse; the text says what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UnitError(pub String);

const SIZE_HELP: &str = "a size like \"4MiB\", \"1GB\", \"512KiB\" or \"100B\" (units B, kB, MB, GB, TB, PB, KiB, MiB, GiB, TiB, PiB)";
const RATE_HELP: &str = "a rate like \"200MB/s\", \"1.5GiB/s\" or \"10Gb/s\" (B = bytes, b = bits; prefixes k, M, G, T, P, Ki, Mi, Gi, Ti, Pi)";
const TIME_HELP: &str = "a time like \"5ms\", \"20us\", \"1s\" (units s, ms, us, µs, ns)";
const FLOPS_HELP: &str = "a compute rate like \"2.5Gflop/s\" (prefixes k, M, G, T, P)";

/// Splits `"1.5GiB"` into the number text and the unit text.
fn split_number(text: &str) -> (&str, &str) {
    let t = text.trim();
    let end = t
        .char_indices()
        .find(|&(_, c)| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+' || c == '_'))
        .map(|(i, _)| i)
        .unwrap_or(t.len());
    (t[..end].trim(), t[end..].trim())
}

/// The multiplier of an SI or IEC prefix (`""` is 1).
fn prefix(p: &str) -> Option<u128> {
    Some(match p {
        "" => 1,
        "k" | "K" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "P" => 1_000_000_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "Pi" => 1 << 50,
        _ => return None,
    })
}

/// A non-negative decimal number as (integer digits, fraction digits) in base 10:
/// `"1.25"` is (125, 2). Errors on signs, exponents and empty text.
fn decimal(num: &str, help: &str) -> Result<(u128, u32), UnitError> {
    if num.starts_with('-') {
        return Err(UnitError(format!("negative value; expected {help}")));
    }
    let num = num.strip_prefix('+').unwrap_or(num).replace('_', "");
    if num.is_empty() {
        return Err(UnitError(format!("no number; expected {help}")));
    }
    let (int, frac) = num.split_once('.').unwrap_or((&num, ""));
    if (int.is_empty() && frac.is_empty())
        || !int.chars().all(|c| c.is_ascii_digit())
        || !frac.chars().all(|c| c.is_ascii_digit())
        || frac.len() > 18
    {
        return Err(UnitError(format!(
            "`{num}` is not a number; expected {help}"
        )));
    }
    let digits = format!("{int}{frac}");
    let v: u128 = digits
        .parse()
        .map_err(|_| UnitError(format!("`{num}` is too large; expected {help}")))?;
    Ok((v, frac.len() as u32))
}

fn as_f64((v, scale): (u128, u32)) -> f64 {
    v as f64 / 10f64.powi(scale as i32)
}

/// Parses a size in bytes: `"4MiB"`, `"1GB"`, `"100B"`. Exact; zero is allowed
/// (callers that need a positive size check it).
pub fn parse_size(text: &str) -> Result<u64, UnitError> {
    let (num, unit) = split_number(text);
    if unit.is_empty() {
        return Err(UnitError(format!("missing unit; expected {SIZE_HELP}")));
    }
    let p = unit
        .strip_suffix('B')
        .and_then(prefix)
        .ok_or_else(|| UnitError(format!("unknown unit `{unit}`; expected {SIZE_HELP}")))?;
    let (v, scale) = decimal(num, SIZE_HELP)?;
    let den = 10u128.pow(scale);
    let total = v
        .checked_mul(p)
        .ok_or_else(|| UnitError(format!("`{text}` is too large")))?;
    if total % den != 0 {
        return Err(UnitError(format!(
            "`{text}` is not a whole number of bytes"
        )));
    }
    u64::try_from(total / den).map_err(|_| UnitError(format!("`{text}` is too large")))
}

/// Parses a data rate in bytes per second: `"200MB/s"`, `"1.5GiB/s"`, `"10Gb/s"`
/// (bits: divided by 8). Zero and negative rates are rejected.
pub fn parse_rate(text: &str) -> Result<f64, UnitError> {
    let (num, unit) = split_number(text);
    if unit.is_empty() {
        return Err(UnitError(format!("missing unit; expected {RATE_HELP}")));
    }
    let bad = || UnitError(format!("unknown unit `{unit}`; expected {RATE_HELP}"));
    let per = unit.strip_suffix("/s").ok_or_else(bad)?;
    let (p, bits) = if let Some(p) = per.strip_suffix('B') {
        (p, false)
    } else if let Some(p) = per.strip_suffix('b') {
        (p, true)
    } else {
        return Err(bad());
    };
    let mult = prefix(p).ok_or_else(bad)? as f64;
    let v = as_f64(decimal(num, RATE_HELP)?) * mult / if bits { 8.0 } else { 1.0 };
    if v <= 0.0 {
        return Err(UnitError(format!(
            "a rate must be positive; expected {RATE_HELP}"
        )));
    }
    Ok(v)
}

/// Parses a time in seconds: `"5ms"`, `"20us"`, `"1s"`. Zero is allowed.
pub fn parse_time(text: &str) -> Result<f64, UnitError> {
    let (num, unit) = split_number(text);
    if unit.is_empty() {
        return Err(UnitError(format!("missing unit; expected {TIME_HELP}")));
    }
    // Divide once by an exact power of ten so that "30us" is the double nearest 30e-6.
    let div = match unit {
        "s" => 1.0,
        "ms" => 1e3,
        "us" | "µs" => 1e6,
        "ns" => 1e9,
        _ => {
            return Err(UnitError(format!(
                "unknown unit `{unit}`; expected {TIME_HELP}"
            )));
        }
    };
    let (v, scale) = decimal(num, TIME_HELP)?;
    Ok(v as f64 / (10f64.powi(scale as i32) * div))
}

/// Parses a compute rate in floating-point operations per second: `"2.5Gflop/s"`.
pub fn parse_flops(text: &str) -> Result<f64, UnitError> {
    let (num, unit) = split_number(text);
    if unit.is_empty() {
        return Err(UnitError(format!("missing unit; expected {FLOPS_HELP}")));
    }
    let bad = || UnitError(format!("unknown unit `{unit}`; expected {FLOPS_HELP}"));
    let p = unit.strip_suffix("flop/s").ok_or_else(bad)?;
    if p.ends_with('i') {
        return Err(bad());
    }
    let v = as_f64(decimal(num, FLOPS_HELP)?) * prefix(p).ok_or_else(bad)? as f64;
    if v <= 0.0 {
        return Err(UnitError(format!(
            "a compute rate must be positive; expected {FLOPS_HELP}"
        )));
    }
    Ok(v)
}

/// Formats bytes with a binary prefix for humans: `4.00 MiB`.
pub fn fmt_size(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = bytes as f64;
    let mut i = 0;
    while v >= 1024.0 && i + 1 < units.len() {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{bytes} B")
    } else {
        format!("{v:.2} {}", units[i])
    }
}

/// Formats a rate in bytes/s with a decimal prefix for humans: `200.0 MB/s`.
pub fn fmt_rate(bps: f64) -> String {
    let units = ["B/s", "kB/s", "MB/s", "GB/s", "TB/s"];
    let mut v = bps;
    let mut i = 0;
    while v >= 1000.0 && i + 1 < units.len() {
        v /= 1000.0;
        i += 1;
    }
    format!("{v:.1} {}", units[i])
}

/// Formats seconds for humans: `1.50 ms`.
pub fn fmt_time(s: f64) -> String {
    if s == 0.0 {
        "0 s".into()
    } else if s < 1e-3 {
        format!("{:.2} us", s * 1e6)
    } else if s < 1.0 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{s:.3} s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_binary_and_decimal_are_exact() {
        assert_eq!(parse_size("4MiB").unwrap(), 4 << 20);
        assert_eq!(parse_size("1GB").unwrap(), 1_000_000_000);
        assert_eq!(parse_size("512KiB").unwrap(), 512 * 1024);
        assert_eq!(parse_size("1.5KiB").unwrap(), 1536);
        assert_eq!(parse_size("100 B").unwrap(), 100);
        assert_eq!(parse_size("24GiB").unwrap(), 24 << 30);
        assert!(parse_size("1.3B").unwrap_err().0.contains("whole number"));
        assert!(
            parse_size("4096")
                .unwrap_err()
                .0
                .starts_with("missing unit")
        );
        assert!(
            parse_size("4MX")
                .unwrap_err()
                .0
                .starts_with("unknown unit `MX`")
        );
        assert!(parse_size("-4MiB").unwrap_err().0.starts_with("negative"));
    }

    #[test]
    fn rates_bytes_and_bits() {
        assert_eq!(parse_rate("200MB/s").unwrap(), 200e6);
        assert_eq!(parse_rate("1.5GiB/s").unwrap(), 1.5 * (1u64 << 30) as f64);
        assert_eq!(parse_rate("10Gb/s").unwrap(), 1.25e9);
        assert_eq!(parse_rate("100Mb/s").unwrap(), 12.5e6);
        assert!(parse_rate("0MB/s").unwrap_err().0.contains("positive"));
        assert!(
            parse_rate("200MB")
                .unwrap_err()
                .0
                .starts_with("unknown unit")
        );
        assert!(parse_rate("200").unwrap_err().0.starts_with("missing unit"));
    }

    #[test]
    fn times_and_flops() {
        assert_eq!(parse_time("5ms").unwrap(), 5e-3);
        assert_eq!(parse_time("20us").unwrap(), 20e-6);
        assert_eq!(parse_time("20µs").unwrap(), 20e-6);
        assert_eq!(parse_time("1s").unwrap(), 1.0);
        assert_eq!(parse_time("0s").unwrap(), 0.0);
        assert!(parse_time("5 min").is_err());
        assert_eq!(parse_flops("2.5Gflop/s").unwrap(), 2.5e9);
        assert!(parse_flops("2GiB/s").is_err());
    }
}
