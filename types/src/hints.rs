//! MPI-IO hints (`MPI_Info` key/value pairs) as plain data.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// An error in a hint given by the user: names the source, the text and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{source_name}: hint `{text}`: {reason}")]
pub struct HintsError {
    /// Where the hint came from: `--hint`, or `FILE:LINE`.
    pub source_name: String,
    /// The offending text.
    pub text: String,
    /// What is wrong and what is allowed.
    pub reason: String,
}

/// MPI-IO hints, ordered by key so that reports and the twin are deterministic.
///
/// Keys are MPI_Info keys as ROMIO names them (`cb_nodes`, `cb_buffer_size`,
/// `romio_cb_write`, `striping_unit`, …). Values are kept as strings, exactly as
/// `MPI_Info_set` takes them; typed accessors parse them where a model needs a number.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Hints(BTreeMap<String, String>);

impl Hints {
    /// No hints.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value`, replacing an earlier value.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.0.insert(key.into(), value.into());
        self
    }

    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// The value of `key` parsed as an unsigned integer (plain bytes or a count).
    pub fn get_u64(&self, key: &str) -> Option<u64> {
        self.get(key).and_then(|v| v.trim().parse().ok())
    }

    /// All hints in key order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// True when no hint is set.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// These hints with `other`'s laid over them (`other` wins on a shared key).
    pub fn merged(&self, other: &Hints) -> Hints {
        let mut out = self.clone();
        out.0
            .extend(other.0.iter().map(|(k, v)| (k.clone(), v.clone())));
        out
    }

    /// Parses one `key=value` item; `source_name` names where it came from for errors.
    pub fn parse_item(&mut self, text: &str, source_name: &str) -> Result<(), HintsError> {
        let err = |reason: &str| HintsError {
            source_name: source_name.to_string(),
            text: text.to_string(),
            reason: reason.to_string(),
        };
        let (k, v) = text
            .split_once('=')
            .ok_or_else(|| err("expected key=value, e.g. cb_nodes=4"))?;
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() || k.chars().any(char::is_whitespace) {
            return Err(err("the key must be one non-empty word"));
        }
        if v.is_empty() {
            return Err(err("the value is empty"));
        }
        self.set(k, v);
        Ok(())
    }

    /// Parses a hints file: one `key=value` (or `key value`) per line, `#` comments.
    pub fn parse_file_text(&mut self, text: &str, file_name: &str) -> Result<(), HintsError> {
        for (i, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let item = match line.split_once('=') {
                Some(_) => line.to_string(),
                None => match line.split_once(char::is_whitespace) {
                    Some((k, v)) => format!("{}={}", k, v.trim()),
                    None => line.to_string(),
                },
            };
            self.parse_item(&item, &format!("{}:{}", file_name, i + 1))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_items_and_files() {
        let mut h = Hints::new();
        h.parse_item("cb_nodes=4", "--hint").unwrap();
        h.parse_file_text(
            "# comment\ncb_buffer_size 16777216\nromio_cb_write=enable\n",
            "h.txt",
        )
        .unwrap();
        assert_eq!(h.get_u64("cb_nodes"), Some(4));
        assert_eq!(h.get_u64("cb_buffer_size"), Some(16 << 20));
        assert_eq!(h.get("romio_cb_write"), Some("enable"));
        let e = h.parse_file_text("ok=1\nbroken\n", "h.txt").unwrap_err();
        assert_eq!(e.source_name, "h.txt:2");
    }
}
