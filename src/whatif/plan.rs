//! Goal-seek: the cheapest configuration whose predicted metric meets a
//! target, found with few twin runs.
//!
//! Capacity is usually monotone in the model's intent: more servers, more
//! stripes or faster devices never make a benchmark slower. So along the
//! searched parameter (the last one given) the first value meeting the target
//! is found by binary search from both ends, in ⌈log2 n⌉ + 2 runs for n values. The
//! assumption is checked on every run made: where a larger value gave a worse
//! result, the violation is reported and the search falls back to a scan of
//! every value, ascending, which finds the first value meeting the target
//! whatever the shape. Other parameters are enumerated (each of their
//! combinations searched along the last one), skipping combinations that
//! cannot be cheaper than the best found.
//!
//! Cost: each parameter's value times its cost per unit (1 by default), summed;
//! a parameter whose values are not numbers counts its position in the list.
//! With intervals, "meets" judges the interval's pessimistic end (the 95 % low
//! for `>=`, the high for `<=`). A combination that is not a valid scenario
//! (more stripes than servers) meets nothing and is left out of the check.

use std::collections::BTreeMap;

use serde::Serialize;

/// Which way a metric must go.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub enum Goal {
    /// `metric >= value` (bandwidths: more is better).
    AtLeast(f64),
    /// `metric <= value` (times: less is better).
    AtMost(f64),
}

/// A target on one metric: `b_eff_io_mb_s >= 20000`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Target {
    /// The metric's name in the run report.
    pub metric: String,
    /// Its bound.
    pub goal: Goal,
    /// Where the target came from, for the reader (`coffee-cup rule: …`).
    pub origin: String,
}

impl Target {
    /// Parses `METRIC >= VALUE` or `METRIC <= VALUE` (`>`, `<` read alike).
    pub fn parse(text: &str) -> Result<Target, String> {
        let bad = || {
            format!(
                "--target `{text}`: expected `METRIC >= VALUE` or `METRIC <= VALUE`, e.g. \"b_eff_io_mb_s >= 20000\", or coffee-cup (b_eff_io)"
            )
        };
        let (metric, op, value) = [">=", "<=", ">", "<"]
            .iter()
            .find_map(|op| text.split_once(op).map(|(m, v)| (m.trim(), *op, v.trim())))
            .ok_or_else(bad)?;
        if metric.is_empty()
            || !metric
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
        {
            return Err(bad());
        }
        let value: f64 = value
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .ok_or_else(bad)?;
        let goal = match op {
            ">=" | ">" => Goal::AtLeast(value),
            _ => Goal::AtMost(value),
        };
        Ok(Target {
            metric: metric.to_string(),
            goal,
            origin: text.trim().to_string(),
        })
    }

    /// The coffee-cup rule of the b_eff_io paper: a balanced system writes half
    /// of its total memory in about 5 minutes, so b_eff_io ≥ memory / 600 s.
    pub fn coffee_cup(total_memory_bytes: f64) -> Target {
        let mb_s = total_memory_bytes / 2.0 / 300.0 / 1e6;
        Target {
            metric: "b_eff_io_mb_s".into(),
            goal: Goal::AtLeast(mb_s),
            origin: format!(
                "coffee-cup rule (b_eff_io paper): half of the total memory ({:.1} GB) written in 5 minutes: b_eff_io_mb_s >= {mb_s:.1}",
                total_memory_bytes / 1e9
            ),
        }
    }

    /// The bound.
    pub fn value(&self) -> f64 {
        match self.goal {
            Goal::AtLeast(v) | Goal::AtMost(v) => v,
        }
    }

    /// Whether `x` meets the target.
    pub fn meets(&self, x: f64) -> bool {
        match self.goal {
            Goal::AtLeast(v) => x >= v,
            Goal::AtMost(v) => x <= v,
        }
    }

    /// The margin of `x` over the bound, percent of the bound (positive: met).
    pub fn margin_pct(&self, x: f64) -> f64 {
        let v = self.value();
        let d = match self.goal {
            Goal::AtLeast(_) => x - v,
            Goal::AtMost(_) => v - x,
        };
        100.0 * d / v.abs()
    }

    /// Whether `b` is no worse than `a` (the direction capacity should move).
    fn no_worse(&self, a: f64, b: f64) -> bool {
        // Relative slack for rounding in the model's arithmetic.
        let slack = 1e-9 * a.abs().max(b.abs());
        match self.goal {
            Goal::AtLeast(_) => b >= a - slack,
            Goal::AtMost(_) => b <= a + slack,
        }
    }
}

/// A parameter that may change: a scenario key and its candidate values, ascending.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Param {
    /// The key, as `--set` writes it.
    pub key: String,
    /// Its values (TOML text), cheapest first.
    pub values: Vec<String>,
    /// Cost per unit of the value.
    pub cost: f64,
}

impl Param {
    /// The cost of value `i`.
    pub fn cost_of(&self, i: usize) -> f64 {
        let units = self.values[i]
            .trim_matches('"')
            .parse::<f64>()
            .unwrap_or(i as f64);
        self.cost * units
    }
}

/// One twin evaluation on the way.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// Each parameter's value.
    pub values: Vec<String>,
    /// The judged value of the metric (the pessimistic end of its interval
    /// with samples); `None` where the combination is not a valid scenario
    /// (a stripe count above the server count, say), which meets nothing.
    pub judged: Option<f64>,
    /// Whether it meets the target.
    pub meets: bool,
    /// How the search came to it: `binary search` or `scan`.
    pub phase: &'static str,
}

/// The search's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Found {
    /// The cheapest configuration meeting the target (indices per parameter), if any.
    pub chosen: Option<Vec<usize>>,
    /// Its cost.
    pub cost: Option<f64>,
    /// Every evaluation, in the order made.
    pub path: Vec<Step>,
    /// Where a larger value gave a worse result.
    pub violations: Vec<String>,
}

/// Finds the cheapest combination of `params` meeting `target`, calling `eval`
/// (the judged metric of a combination, indices per parameter; `None` for a
/// combination that is not a valid scenario) once per combination at most.
pub fn seek(
    params: &[Param],
    target: &Target,
    mut eval: impl FnMut(&[usize]) -> Result<Option<f64>, String>,
) -> Result<Found, String> {
    let (last, others) = params
        .split_last()
        .ok_or("plan: give at least one --range")?;
    let mut cache: BTreeMap<Vec<usize>, Option<f64>> = BTreeMap::new();
    let mut found = Found {
        chosen: None,
        cost: None,
        path: Vec::new(),
        violations: Vec::new(),
    };
    let mut run = |cache: &mut BTreeMap<Vec<usize>, Option<f64>>,
                   idx: &[usize],
                   phase: &'static str,
                   found: &mut Found|
     -> Result<bool, String> {
        if let Some(x) = cache.get(idx) {
            return Ok(x.is_some_and(|x| target.meets(x)));
        }
        let x = eval(idx)?;
        cache.insert(idx.to_vec(), x);
        let meets = x.is_some_and(|x| target.meets(x));
        found.path.push(Step {
            values: idx
                .iter()
                .zip(params)
                .map(|(&i, p)| p.values[i].clone())
                .collect(),
            judged: x,
            meets,
            phase,
        });
        Ok(meets)
    };
    // Every combination of the other parameters, cheapest first.
    let mut combos: Vec<Vec<usize>> = vec![Vec::new()];
    for p in others {
        combos = combos
            .into_iter()
            .flat_map(|c| (0..p.values.len()).map(move |i| [c.clone(), vec![i]].concat()))
            .collect();
    }
    let fixed_cost = |c: &[usize]| {
        c.iter()
            .zip(others)
            .map(|(&i, p)| p.cost_of(i))
            .sum::<f64>()
    };
    combos.sort_by(|a, b| fixed_cost(a).total_cmp(&fixed_cost(b)));
    let n = last.values.len();
    for combo in combos {
        let floor = fixed_cost(&combo) + last.cost_of(0);
        if found.cost.is_some_and(|best| floor >= best) {
            continue;
        }
        let at = |i: usize| [combo.clone(), vec![i]].concat();
        // Binary search for the first value meeting the target.
        // Both ends first: the lowest may already meet it, and with both the
        // check below has a bracket to judge the middle points by.
        let mut first = None;
        if run(&mut cache, &at(0), "binary search", &mut found)? {
            first = Some(0);
        } else if run(&mut cache, &at(n - 1), "binary search", &mut found)? {
            let (mut lo, mut hi) = (0, n - 1);
            while lo < hi {
                let mid = (lo + hi) / 2;
                match run(&mut cache, &at(mid), "binary search", &mut found)? {
                    true => hi = mid,
                    false => lo = mid + 1,
                }
            }
            first = Some(lo);
        }
        // Check what the search saw: along the parameter, never worse.
        let seen: Vec<(usize, f64)> = (0..n)
            .filter_map(|i| cache.get(&at(i)).copied().flatten().map(|x| (i, x)))
            .collect();
        let broken: Vec<String> = seen
            .windows(2)
            .filter(|w| !target.no_worse(w[0].1, w[1].1))
            .map(|w| {
                format!(
                    "not monotone: {key} = {} gives {} = {:.6}, but the larger {key} = {} gives {:.6}",
                    last.values[w[0].0],
                    target.metric,
                    w[0].1,
                    last.values[w[1].0],
                    w[1].1,
                    key = last.key
                )
            })
            .collect();
        if !broken.is_empty() {
            found.violations.extend(broken);
            // Not monotone: the first value meeting the target, by a scan.
            first = None;
            for i in 0..n {
                if run(&mut cache, &at(i), "scan", &mut found)? {
                    first = Some(i);
                    break;
                }
            }
        }
        if let Some(i) = first {
            let cost = fixed_cost(&combo) + last.cost_of(i);
            if found.cost.is_none_or(|best| cost < best) {
                found.cost = Some(cost);
                found.chosen = Some(at(i));
            }
        }
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn servers(n: usize) -> Param {
        Param {
            key: "server.count".into(),
            values: (1..=n).map(|i| i.to_string()).collect(),
            cost: 1.0,
        }
    }

    #[test]
    fn binary_search_finds_the_known_answer_of_a_monotone_model() {
        // bandwidth = 700 MB/s per server, capped at 40 GB/s: 20000 needs 29 servers.
        let target = Target::parse("bw_mb_s >= 20000").unwrap();
        let mut runs = 0;
        let found = seek(&[servers(64)], &target, |i| {
            runs += 1;
            Ok(Some((700.0 * (i[0] + 1) as f64).min(40000.0)))
        })
        .unwrap();
        assert_eq!(found.chosen, Some(vec![28]));
        assert!(found.violations.is_empty());
        assert!(runs <= 8, "{runs} runs for 64 values");
        assert!(
            runs >= 7,
            "{runs} runs: a binary search over 64 values needs 6 besides the ends"
        );
        assert_eq!(found.path.len(), runs);
    }

    #[test]
    fn a_planted_non_monotone_point_is_reported_and_the_scan_finds_the_first_value() {
        // Monotone but for 16 servers (the search's first middle point), planted
        // far too slow; 10 servers already meet the target.
        let target = Target::parse("bw_mb_s >= 20000").unwrap();
        let model = |i: usize| {
            if i + 1 == 16 {
                100.0
            } else {
                2000.0 * (i + 1) as f64
            }
        };
        let found = seek(&[servers(32)], &target, |i| Ok(Some(model(i[0])))).unwrap();
        assert_eq!(found.chosen, Some(vec![9]));
        assert!(
            found
                .violations
                .iter()
                .any(|v| v.contains("server.count = 16")),
            "{:?}",
            found.violations
        );
        assert!(found.path.iter().any(|s| s.phase == "scan"));
    }

    #[test]
    fn the_cheapest_of_two_parameters_weighs_their_costs() {
        // Throughput = servers x disks x 100; target 2400; a server costs 10, a disk 1.
        let target = Target::parse("bw >= 2400").unwrap();
        let disks = Param {
            key: "disks".into(),
            values: (1..=12).map(|i| i.to_string()).collect(),
            cost: 1.0,
        };
        let srv = Param {
            cost: 10.0,
            ..servers(8)
        };
        let found = seek(&[srv, disks], &target, |i| {
            Ok(Some(((i[0] + 1) * (i[1] + 1)) as f64 * 100.0))
        })
        .unwrap();
        // 2 servers x 12 disks = 32, 3 x 8 = 38, 4 x 6 = 46: 2 x 12 is cheapest.
        assert_eq!(found.chosen, Some(vec![1, 11]));
        assert_eq!(found.cost, Some(32.0));
    }

    #[test]
    fn a_target_out_of_reach_chooses_nothing() {
        let target = Target::parse("t_s <= 0.5").unwrap();
        let found = seek(&[servers(8)], &target, |i| {
            Ok(Some(10.0 / (i[0] + 1) as f64))
        })
        .unwrap();
        assert_eq!(found.chosen, None);
        assert_eq!(found.path.len(), 2, "both ends, and neither meets it");
    }

    #[test]
    fn targets_parse_and_bad_ones_say_what_is_expected() {
        let t = Target::parse("write_mib_s>=100").unwrap();
        assert_eq!(t.goal, Goal::AtLeast(100.0));
        assert!(
            Target::parse("write_mib_s = 100")
                .unwrap_err()
                .contains("METRIC >= VALUE")
        );
        assert!(Target::parse(">= 100").is_err());
        assert!(Target::parse("x >= fast").is_err());
        let c = Target::coffee_cup(600e9);
        assert!((c.value() - 1000.0).abs() < 1e-9);
    }
}
