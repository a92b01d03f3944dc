//! Reading a Stripe form body: known parameters only (Stripe refuses unknown ones with
//! `parameter_unknown`), nested fields as `name[key]`, integers and booleans as Stripe
//! spells them.

use super::intent::{Effect, bad_param};

pub(super) struct Params<'a>(pub &'a [(String, String)]);

impl Params<'_> {
    pub(super) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The first parameter that is neither in `names` nor nested under one of `nested`
    /// (`metadata[...]`, `expand[]`), refused as Stripe refuses it.
    pub(super) fn unknown(&self, names: &[&str], nested: &[&str]) -> Option<Effect> {
        let known = |key: &str| {
            let root = key.split('[').next().unwrap_or(key);
            if key.contains('[') {
                nested.contains(&root) && key.ends_with(']')
            } else {
                names.contains(&key)
            }
        };
        self.0.iter().find(|(k, _)| !known(k)).map(|(k, _)| {
            bad_param(
                "parameter_unknown",
                k,
                &format!("Received unknown parameter: {k}"),
            )
        })
    }

    /// A required integer above zero.
    pub(super) fn positive(&self, name: &str) -> Result<i64, Effect> {
        let Some(raw) = self.get(name) else {
            return Err(bad_param(
                "parameter_missing",
                name,
                &format!("Missing required param: {name}."),
            ));
        };
        raw.parse::<i64>().ok().filter(|a| *a > 0).ok_or_else(|| {
            bad_param(
                "parameter_invalid_integer",
                name,
                &format!("Invalid positive integer: {name} was {raw:?}"),
            )
        })
    }
}

/// Stripe's form booleans.
pub(super) fn flag(value: Option<&str>) -> bool {
    value == Some("true")
}
