//! A configuration: knob name -> value, in the target file's order. What adapters render,
//! what the tuner varies, what the evidence names.

use serde::{Deserialize, Serialize};

/// One configuration of the server: (knob, value) pairs, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Settings(pub Vec<(String, String)>);

/// A knob's value among `values`.
pub fn get<'a>(values: &'a [(String, String)], knob: &str) -> Option<&'a str> {
    values.iter().find(|(k, _)| k == knob).map(|(_, v)| v.as_str())
}

impl std::ops::Deref for Settings {
    type Target = [(String, String)];
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl Settings {
    /// The value of `knob`, None when these settings do not set it.
    pub fn get(&self, knob: &str) -> Option<&str> {
        get(&self.0, knob)
    }

    /// A copy with every `knob = value` of `overrides` set, in their order.
    pub fn with_all(&self, overrides: &[(String, String)]) -> Settings {
        overrides.iter().fold(self.clone(), |s, (k, v)| s.with(k, v))
    }

    /// A copy with `knob` set to `value` (appended when new).
    pub fn with(&self, knob: &str, value: &str) -> Settings {
        let mut s = self.clone();
        match s.0.iter_mut().find(|(k, _)| k == knob) {
            Some(slot) => slot.1 = value.to_string(),
            None => s.0.push((knob.to_string(), value.to_string())),
        }
        s
    }

    /// "workers=4 keepalive=off", for labels and logs.
    pub fn label(&self) -> String {
        self.0.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" ")
    }

    /// The knobs whose values differ from `other`'s.
    pub fn changed_from(&self, other: &Settings) -> Vec<String> {
        self.0.iter().filter(|(k, v)| other.get(k) != Some(v.as_str())).map(|(k, _)| k.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_replaces_in_place_and_appends() {
        let s = Settings(vec![("workers".into(), "2".into()), ("keepalive".into(), "on".into())]);
        let t = s.with("workers", "4").with("backlog", "128");
        assert_eq!(t.label(), "workers=4 keepalive=on backlog=128");
        assert_eq!(t.changed_from(&s), ["workers", "backlog"]);
        assert_eq!(s.get("keepalive"), Some("on"));
    }
}
