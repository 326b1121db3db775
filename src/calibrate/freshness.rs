//! Whether a calibrated scenario still describes this machine: the machine
//! facts its probes file recorded (host, processor, cores, memory) against
//! today's, its age, and a quick check probe (calibration's largest in-process
//! memcpy again, against the range calibration measured). `piotwin calibrate --check` prints the
//! verdict and `make demo` recalibrates on a stale one instead of reusing it.
//!
//! What it is not: a re-validation of the model. A machine that passes may
//! still have changed where the quick probe does not look (its disk, its MPI).

use super::Machine;

/// How far a quick-check rate may lie outside the calibrated interval, as a
/// factor: run-to-run noise of an in-process copy on a shared machine.
pub const QUICK_CHECK_SLACK: f64 = 1.25;

/// Days since 1970-01-01 of the proleptic Gregorian date `y-m-d`
/// (H. Hinnant's `days_from_civil`).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date `YYYY-MM-DD` of `days` since 1970-01-01 (Hinnant's `civil_from_days`).
pub fn civil_from_days(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Today's UTC date, `YYYY-MM-DD`.
pub fn today() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    civil_from_days((secs / 86_400) as i64)
}

/// Days since 1970-01-01 of a `YYYY-MM-DD` date; `None` if it is not one.
pub fn parse_date(text: &str) -> Option<i64> {
    let mut it = text.trim().splitn(3, '-');
    let y: i64 = it.next()?.parse().ok()?;
    let m: u32 = it.next()?.parse().ok()?;
    let d: u32 = it.next()?.parse().ok()?;
    ((1..=12).contains(&m) && (1..=31).contains(&d)).then(|| days_from_civil(y, m, d))
}

/// The quick check: a rate measured now against the range calibration measured.
#[derive(Debug, Clone, PartialEq)]
pub struct QuickCheck {
    /// What it measures (`memcpy of 268435456 bytes`).
    pub key: String,
    /// Measured now (median), B/s.
    pub measured: f64,
    /// The least calibration measured, B/s.
    pub low: f64,
    /// Upper end.
    pub high: f64,
}

/// Why a calibration recorded on `then` is stale on `now` (today `today`, a
/// `YYYY-MM-DD` date), given at most `max_age_days` and the quick check;
/// empty when it is fresh. `then` is `None` when no probes file recorded the
/// machine.
pub fn stale_reasons(
    then: Option<&Machine>,
    now: &Machine,
    today: &str,
    max_age_days: u32,
    quick: Option<&QuickCheck>,
) -> Vec<String> {
    let mut why = Vec::new();
    let Some(then) = then else {
        return vec![
            "no machine facts recorded (its probes file is missing): calibrated elsewhere or by hand"
                .into(),
        ];
    };
    if then.host != now.host {
        why.push(format!(
            "calibrated on host `{}`, this is `{}`",
            then.host, now.host
        ));
    }
    if let (Some(a), Some(b)) = (&then.cpu, &now.cpu)
        && a != b
    {
        why.push(format!("calibrated on a `{a}` processor, this is a `{b}`"));
    }
    if then.cores != now.cores {
        why.push(format!(
            "calibrated with {} cores, this machine has {}",
            then.cores, now.cores
        ));
    }
    let (a, b) = (then.mem_total_bytes as f64, now.mem_total_bytes as f64);
    if (a - b).abs() > 0.01 * b {
        why.push(format!(
            "calibrated with {} bytes of memory, this machine has {}",
            then.mem_total_bytes, now.mem_total_bytes
        ));
    }
    match then.date.as_deref().map(|d| (d, parse_date(d))) {
        None => why.push("no calibration date recorded".into()),
        Some((d, None)) => why.push(format!("calibration date `{d}` is not a YYYY-MM-DD date")),
        Some((d, Some(day))) => {
            if let Some(t) = parse_date(today) {
                let age = t - day;
                if age > i64::from(max_age_days) {
                    why.push(format!(
                        "calibrated on {d}, {age} days ago (more than {max_age_days})"
                    ));
                }
            }
        }
    }
    if let Some(q) = quick {
        let (lo, hi) = (q.low / QUICK_CHECK_SLACK, q.high * QUICK_CHECK_SLACK);
        if !(lo..=hi).contains(&q.measured) {
            why.push(format!(
                "quick check: {} measures {:.4e} B/s now, outside the [{:.4e}, {:.4e}] calibration measured, widened by {QUICK_CHECK_SLACK}x",
                q.key, q.measured, q.low, q.high
            ));
        }
    }
    why
}

#[cfg(test)]
mod tests {
    use super::*;

    fn machine(host: &str, cores: usize, date: Option<&str>) -> Machine {
        Machine {
            host: host.into(),
            cores,
            mem_total_bytes: 24 << 30,
            cpu_cache_bytes: 32 << 20,
            readahead_bytes: None,
            date: date.map(str::to_string),
            cpu: Some("EPYC".into()),
            unreported_free_bytes: None,
            private_cache_bytes: None,
        }
    }

    #[test]
    fn dates_round_trip_and_count_days() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(civil_from_days(0), "1970-01-01");
        // 2026-11-27 is day 20 784: 56 years of 365 days, 14 leap days, then 330 days.
        assert_eq!(days_from_civil(2026, 11, 27), 56 * 365 + 14 + 330);
        for d in [-1000, 0, 59, 60, 11_016, 20_784, 40_000] {
            assert_eq!(parse_date(&civil_from_days(d)), Some(d));
        }
        assert_eq!(civil_from_days(days_from_civil(2024, 2, 29)), "2024-02-29");
        assert_eq!(parse_date("2026-13-01"), None);
        assert_eq!(parse_date("yesterday"), None);
    }

    #[test]
    fn a_calibration_is_stale_on_another_machine_when_old_or_when_the_quick_check_misses() {
        let now = machine("vm", 2, None);
        let fresh = machine("vm", 2, Some("2026-11-20"));
        assert!(stale_reasons(Some(&fresh), &now, "2026-11-27", 30, None).is_empty());
        let why = stale_reasons(Some(&fresh), &now, "2027-01-20", 30, None);
        assert_eq!(
            why,
            vec!["calibrated on 2026-11-20, 61 days ago (more than 30)".to_string()]
        );
        let other = machine("ws", 4, Some("2026-11-20"));
        let why = stale_reasons(Some(&other), &now, "2026-11-27", 30, None);
        assert!(
            why[0].contains("host `ws`") && why[1].contains("4 cores"),
            "{why:?}"
        );
        let mut xeon = fresh.clone();
        xeon.cpu = Some("Xeon".into());
        let why = stale_reasons(Some(&xeon), &now, "2026-11-27", 30, None);
        assert_eq!(
            why,
            vec!["calibrated on a `Xeon` processor, this is a `EPYC`".to_string()]
        );
        let undated = machine("vm", 2, None);
        assert_eq!(
            stale_reasons(Some(&undated), &now, "2026-11-27", 30, None),
            vec!["no calibration date recorded".to_string()]
        );
        assert!(stale_reasons(None, &now, "2026-11-27", 30, None)[0].contains("no machine facts"));
        // 18 GB/s calibrated in [17, 19]: 15 passes (above 17 / 1.25 = 13.6), 13 does not.
        let check = |measured| QuickCheck {
            key: "memcpy of 268435456 bytes".into(),
            measured,
            low: 17e9,
            high: 19e9,
        };
        assert!(stale_reasons(Some(&fresh), &now, "2026-11-27", 30, Some(&check(15e9))).is_empty());
        let why = stale_reasons(Some(&fresh), &now, "2026-11-27", 30, Some(&check(13e9)));
        assert!(
            why[0].starts_with("quick check: memcpy of 268435456 bytes"),
            "{why:?}"
        );
    }
}
