//! One table of a scenario being read: its keys checked against the schema,
//! each value taken as the schema declares it (with its unit, default and
//! bounds), every error naming the file, line, key path and value.

use std::ops::Range;

use toml::Spanned;
use toml::de::{DeTable, DeValue};

use super::schema::{self, Default as KeyDefault, Holds};
use super::*;
use crate::units::{self, UnitError};

/// Reading context: the file name, the text it was parsed from (the file, then
/// one line per `--set` override) and where each override's text lies.
pub(super) struct Doc<'t> {
    pub(super) file: &'t str,
    pub(super) text: &'t str,
    /// (start of the override's text in `text`, the override as given: `KEY=VALUE`).
    pub(super) overrides: Vec<(usize, String)>,
}

impl Doc<'_> {
    pub(super) fn line(&self, span: &Range<usize>) -> usize {
        let end = span.start.min(self.text.len());
        self.text[..end].bytes().filter(|&b| b == b'\n').count() + 1
    }

    /// The `--set` override a span lies in, if any.
    pub(super) fn override_of(&self, span: &Range<usize>) -> Option<&str> {
        self.overrides
            .iter()
            .rev()
            .find(|(start, _)| span.start >= *start)
            .map(|(_, o)| o.as_str())
    }

    pub(super) fn err(
        &self,
        span: &Range<usize>,
        key: &str,
        value: bool,
        message: impl Into<String>,
    ) -> ScenarioError {
        let raw = self.text.get(span.clone()).map(str::trim).unwrap_or("");
        let (file, line) = match self.override_of(span) {
            Some(o) => (format!("--set {o}"), None),
            None => (self.file.to_string(), Some(self.line(span))),
        };
        ScenarioError {
            file,
            line,
            key: (!key.is_empty()).then(|| key.to_string()),
            value: (value && !raw.is_empty()).then(|| raw.to_string()),
            message: message.into(),
        }
    }
}

/// One table being read: checks its keys against the allowed set on creation.
pub(super) struct Tbl<'a, 'i> {
    pub(super) doc: &'a Doc<'a>,
    pub(super) path: String,
    pub(super) span: Range<usize>,
    pub(super) table: &'a DeTable<'i>,
}

pub(super) type Val<'i> = Spanned<DeValue<'i>>;

impl<'a, 'i> Tbl<'a, 'i> {
    pub(super) fn new(
        doc: &'a Doc<'a>,
        path: String,
        span: Range<usize>,
        table: &'a DeTable<'i>,
        allowed: &[&str],
    ) -> Result<Self, ScenarioError> {
        for (k, _) in table.iter() {
            if !allowed.contains(&k.get_ref().as_ref()) {
                let full = join(&path, k.get_ref());
                let here = if path.is_empty() {
                    "at the top level".to_string()
                } else {
                    format!("in [{path}]")
                };
                return Err(doc.err(
                    &k.span(),
                    &full,
                    false,
                    format!("unknown key; allowed {here}: {}", allowed.join(", ")),
                ));
            }
        }
        Ok(Tbl {
            doc,
            path,
            span,
            table,
        })
    }

    pub(super) fn key(&self, k: &str) -> String {
        join(&self.path, k)
    }

    /// Checks (debug builds) that key `k` of this table is in the schema and
    /// holds what `ok` accepts: the reader takes every key as the schema
    /// declares it. `[calibration]` entries are checked against the schema
    /// by [`calibrated_key`] instead.
    pub(super) fn declared(&self, k: &str, ok: fn(Holds) -> bool) {
        if cfg!(debug_assertions) && !self.path.starts_with("calibration") {
            let path = schema::plain(&self.key(k));
            let key = schema::find(&path);
            assert!(
                key.is_some_and(|key| ok(key.holds)),
                "scenario key `{path}` is read as another kind than the schema declares ({key:?})"
            );
        }
    }

    /// Checks (debug builds) that `default`, used where key `k` is absent, is
    /// the schema's: its value (parsed by `parse`), or one it says is worked
    /// out from other keys.
    pub(super) fn default_is<T: PartialEq + fmt::Debug>(
        &self,
        k: &str,
        default: &T,
        parse: fn(&str) -> Option<T>,
    ) {
        if cfg!(debug_assertions) && !self.path.starts_with("calibration") {
            let path = schema::plain(&self.key(k));
            match schema::find(&path).map(|key| key.default) {
                Some(KeyDefault::Value(text)) => {
                    let declared = parse(text.trim_matches('"'));
                    assert!(
                        declared.as_ref() == Some(default),
                        "scenario key `{path}`: the reader's default {default:?} is not the schema's {text}"
                    );
                }
                Some(KeyDefault::Otherwise(_)) => {}
                other => panic!(
                    "scenario key `{path}`: a default for a key the schema declares {other:?}"
                ),
            }
        }
    }

    pub(super) fn opt(&self, k: &str) -> Option<&'a Val<'i>> {
        self.table.get(k)
    }

    pub(super) fn req(&self, k: &str, what: &str) -> Result<&'a Val<'i>, ScenarioError> {
        self.opt(k).ok_or_else(|| {
            let where_ = if self.path.is_empty() {
                "the top level".into()
            } else {
                format!("[{}]", self.path)
            };
            self.doc.err(
                &self.span,
                &self.key(k),
                false,
                format!("missing key in {where_}; expected {what}"),
            )
        })
    }

    pub(super) fn bad(&self, k: &str, v: &Val<'i>, message: impl Into<String>) -> ScenarioError {
        self.doc.err(&v.span(), &self.key(k), true, message)
    }

    pub(super) fn string_of(
        &self,
        k: &str,
        v: &Val<'i>,
        what: &str,
    ) -> Result<String, ScenarioError> {
        match v.get_ref() {
            DeValue::String(s) => Ok(s.to_string()),
            other => Err(self.bad(
                k,
                v,
                format!("expected {what} in quotes, found a {}", other.type_str()),
            )),
        }
    }

    pub(super) fn string(&self, k: &str, what: &str) -> Result<String, ScenarioError> {
        self.declared(k, |h| h == Holds::Text);
        let v = self.req(k, what)?;
        self.string_of(k, v, what)
    }

    pub(super) fn string_or(
        &self,
        k: &str,
        what: &str,
        default: &str,
    ) -> Result<String, ScenarioError> {
        self.declared(k, |h| h == Holds::Text);
        self.default_is(k, &default.to_string(), |t| Some(t.to_string()));
        match self.opt(k) {
            Some(v) => self.string_of(k, v, what),
            None => Ok(default.to_string()),
        }
    }

    /// One of `choices` (a quoted word); its index.
    pub(super) fn choice(
        &self,
        k: &str,
        choices: &[&str],
        default: usize,
    ) -> Result<usize, ScenarioError> {
        self.declared(k, |h| matches!(h, Holds::Choice(_)));
        let first = choices[default].to_string();
        self.default_is(k, &first, |t| Some(t.to_string()));
        let Some(v) = self.opt(k) else {
            return Ok(default);
        };
        let what = format!("one of {}", choices.join(", "));
        let s = self.string_of(k, v, &what)?;
        choices
            .iter()
            .position(|c| *c == s)
            .ok_or_else(|| self.bad(k, v, format!("expected {what}")))
    }

    pub(super) fn unit<T>(
        &self,
        k: &str,
        what: &str,
        parse: fn(&str) -> Result<T, UnitError>,
    ) -> Result<T, ScenarioError> {
        let v = self.req(k, what)?;
        match v.get_ref() {
            DeValue::String(s) => parse(s).map_err(|e| self.bad(k, v, e.0)),
            DeValue::Integer(_) | DeValue::Float(_) => Err(self.bad(
                k,
                v,
                format!("missing unit; expected {what} as a quoted string"),
            )),
            other => Err(self.bad(
                k,
                v,
                format!("expected {what}, found a {}", other.type_str()),
            )),
        }
    }

    pub(super) fn size(&self, k: &str) -> Result<u64, ScenarioError> {
        self.declared(k, |h| h == Holds::Quantity(KeyKind::Size));
        let s = self.unit(k, "a size like \"4MiB\"", units::parse_size)?;
        if s == 0 {
            return Err(self.bad(k, self.req(k, "")?, "a size must be positive"));
        }
        Ok(s)
    }

    /// A size that may be 0 (`"0B"`), or `default` when absent.
    pub(super) fn size_or_zero(&self, k: &str, default: u64) -> Result<u64, ScenarioError> {
        self.declared(k, |h| h == Holds::Quantity(KeyKind::Size));
        self.default_is(k, &default, |t| units::parse_size(t).ok());
        match self.opt(k) {
            Some(_) => self.unit(k, "a size like \"4MiB\"", units::parse_size),
            None => Ok(default),
        }
    }

    pub(super) fn size_or(&self, k: &str, default: u64) -> Result<u64, ScenarioError> {
        self.default_is(k, &default, |t| units::parse_size(t).ok());
        if self.opt(k).is_some() {
            self.size(k)
        } else {
            Ok(default)
        }
    }

    pub(super) fn rate(&self, k: &str) -> Result<f64, ScenarioError> {
        self.declared(k, |h| h == Holds::Quantity(KeyKind::Rate));
        let r = self.unit(k, "a rate like \"200MB/s\"", units::parse_rate)?;
        if r <= 0.0 {
            return Err(self.bad(k, self.req(k, "")?, "a rate must be positive"));
        }
        Ok(r)
    }

    /// A required value of `kind` (with its unit, or a plain number for
    /// [`KeyKind::Number`]): the value in base units and the text as written.
    pub(super) fn quantity(&self, k: &str, kind: KeyKind) -> Result<(f64, String), ScenarioError> {
        let v = self.req(k, "a value")?;
        let x = match kind {
            KeyKind::Size => self.unit(k, "a size like \"4MiB\"", units::parse_size)? as f64,
            KeyKind::Rate => self.rate(k)?,
            KeyKind::Time => self.time(k)?,
            KeyKind::Flops => self.flops(k)?,
            KeyKind::Number => {
                let n = match v.get_ref() {
                    DeValue::Float(f) => f.as_str().parse::<f64>().ok(),
                    DeValue::Integer(i) => i.as_str().parse::<f64>().ok(),
                    _ => None,
                };
                match n {
                    Some(n) if n.is_finite() && n >= 0.0 => n,
                    _ => {
                        return Err(self.bad(
                            k,
                            v,
                            "expected a plain number ≥ 0 (this key has no unit)",
                        ));
                    }
                }
            }
        };
        let raw = match v.get_ref() {
            DeValue::String(s) => s.to_string(),
            _ => self.doc.text[v.span()].trim().to_string(),
        };
        Ok((x, raw))
    }

    /// An optional plain number ≥ 0 ([`KeyKind::Number`]), `default` where absent.
    pub(super) fn number_or(&self, k: &str, default: f64) -> Result<f64, ScenarioError> {
        self.default_is(k, &default, |t| t.parse::<f64>().ok());
        match self.opt(k) {
            Some(_) => Ok(self.quantity(k, KeyKind::Number)?.0),
            None => Ok(default),
        }
    }

    /// An optional plain number ≥ 0 ([`KeyKind::Number`]), `None` where absent.
    pub(super) fn number_opt(&self, k: &str) -> Result<Option<f64>, ScenarioError> {
        match self.opt(k) {
            Some(_) => Ok(Some(self.quantity(k, KeyKind::Number)?.0)),
            None => Ok(None),
        }
    }

    pub(super) fn rate_or(&self, k: &str, default: f64) -> Result<f64, ScenarioError> {
        self.default_is(k, &default, |t| units::parse_rate(t).ok());
        if self.opt(k).is_some() {
            self.rate(k)
        } else {
            Ok(default)
        }
    }

    pub(super) fn time(&self, k: &str) -> Result<f64, ScenarioError> {
        self.declared(k, |h| h == Holds::Quantity(KeyKind::Time));
        self.unit(k, "a time like \"5ms\"", units::parse_time)
    }

    pub(super) fn time_or(&self, k: &str, default: f64) -> Result<f64, ScenarioError> {
        self.default_is(k, &default, |t| units::parse_time(t).ok());
        if self.opt(k).is_some() {
            self.time(k)
        } else {
            Ok(default)
        }
    }

    pub(super) fn flops(&self, k: &str) -> Result<f64, ScenarioError> {
        self.declared(k, |h| h == Holds::Quantity(KeyKind::Flops));
        self.unit(k, "a compute rate like \"2Gflop/s\"", units::parse_flops)
    }

    pub(super) fn int(&self, k: &str, min: u64) -> Result<u64, ScenarioError> {
        self.declared(k, |h| matches!(h, Holds::Integer | Holds::Choice(_)));
        let what = format!("a whole number ≥ {min}");
        let v = self.req(k, &what)?;
        let n = match v.get_ref() {
            DeValue::Integer(i) => i64::from_str_radix(i.as_str(), i.radix()).ok(),
            _ => None,
        };
        match n {
            Some(n) if n >= 0 && n as u64 >= min => Ok(n as u64),
            _ => Err(self.bad(k, v, format!("expected {what}"))),
        }
    }

    pub(super) fn int_or(&self, k: &str, min: u64, default: u64) -> Result<u64, ScenarioError> {
        self.default_is(k, &default, |t| t.parse().ok());
        if self.opt(k).is_some() {
            self.int(k, min)
        } else {
            Ok(default)
        }
    }

    /// A fraction, or `default` (the schema's) when absent.
    pub(super) fn fraction_or(&self, k: &str, default: f64) -> Result<f64, ScenarioError> {
        self.default_is(k, &default, |t| t.parse().ok());
        Ok(self.fraction(k)?.unwrap_or(default))
    }

    pub(super) fn fraction(&self, k: &str) -> Result<Option<f64>, ScenarioError> {
        self.declared(k, |h| h == Holds::Fraction);
        let Some(v) = self.opt(k) else {
            return Ok(None);
        };
        let x = match v.get_ref() {
            DeValue::Float(f) => f.as_str().parse::<f64>().ok(),
            DeValue::Integer(i) => i.as_str().parse::<f64>().ok(),
            _ => None,
        };
        match x {
            Some(x) if (0.0..1.0).contains(&x) => Ok(Some(x)),
            _ => Err(self.bad(
                k,
                v,
                "expected a number from 0 (inclusive) to 1 (exclusive), e.g. 0.1",
            )),
        }
    }

    pub(super) fn sub(&self, k: &str, allowed: &[&str]) -> Result<Tbl<'a, 'i>, ScenarioError> {
        let v = self.req(k, "a table")?;
        match v.get_ref() {
            DeValue::Table(t) => Tbl::new(self.doc, self.key(k), v.span(), t, allowed),
            other => Err(self.bad(
                k,
                v,
                format!(
                    "expected a table [{}], found a {}",
                    self.key(k),
                    other.type_str()
                ),
            )),
        }
    }

    pub(super) fn sub_opt(
        &self,
        k: &str,
        allowed: &[&str],
    ) -> Result<Option<Tbl<'a, 'i>>, ScenarioError> {
        if self.opt(k).is_some() {
            self.sub(k, allowed).map(Some)
        } else {
            Ok(None)
        }
    }

    /// An array of tables `[[k]]` (absent = empty).
    pub(super) fn tables(
        &self,
        k: &str,
        allowed: &[&str],
    ) -> Result<Vec<Tbl<'a, 'i>>, ScenarioError> {
        let Some(v) = self.opt(k) else {
            return Ok(Vec::new());
        };
        let DeValue::Array(arr) = v.get_ref() else {
            return Err(self.bad(k, v, format!("expected [[{}]] tables", self.key(k))));
        };
        arr.iter()
            .enumerate()
            .map(|(i, g)| {
                let path = format!("{}[{i}]", self.key(k));
                match g.get_ref() {
                    DeValue::Table(t) => Tbl::new(self.doc, path, g.span(), t, allowed),
                    _ => Err(self.doc.err(&g.span(), &path, true, "expected a table")),
                }
            })
            .collect()
    }
}

pub(super) fn join(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}
