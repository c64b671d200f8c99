//! A configuration as the tuner sees it: knob name -> value, in the target file's order.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Settings(pub Vec<(String, String)>);

impl Settings {
    pub fn get(&self, knob: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == knob).map(|(_, v)| v.as_str())
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
