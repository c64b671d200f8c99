//! `webtune lab`, the embedded pre-forking server: knobs are its flags.

use super::adapter::{Adapter, Ctx, Prepared};
use crate::server::file::TargetFile;
use crate::server::process::Spawn;
use crate::server::settings::{Count, Typed};

/// The adapter for `webtune lab`, the embedded server.
pub struct Lab;

const NATIVE: [(&str, &str); 8] = [
    ("workers", "workers"),
    ("max_requests", "max-requests"),
    ("start_workers", "start-workers"),
    ("min_spare", "min-spare"),
    ("max_spare", "max-spare"),
    ("keepalive", "keepalive"),
    ("keepalive_timeout", "keepalive-timeout"),
    ("backlog", "backlog"),
];

/// What a lab knob's value is, so a file's mistake is found when it is read, with its line,
/// not when the lab refuses its flag after the tuner has started.
#[derive(Clone, Copy)]
enum Value {
    Count,
    Switch,
    Duration,
    /// A size in KiB or larger units (preload, dirty, leak).
    Size,
    /// A size in bytes (body).
    Bytes,
}

/// Every knob the lab has: its flags, as `webtune lab --help` lists them.
const KNOBS: [(&str, Value); 15] = [
    ("workers", Value::Count),
    ("start_workers", Value::Count),
    ("min_spare", Value::Count),
    ("max_spare", Value::Count),
    ("max_requests", Value::Count),
    ("keepalive", Value::Switch),
    ("keepalive_timeout", Value::Duration),
    ("max_keepalive_requests", Value::Count),
    ("backlog", Value::Count),
    ("preload", Value::Size),
    ("cpu", Value::Duration),
    ("io_wait", Value::Duration),
    ("dirty", Value::Size),
    ("leak", Value::Size),
    ("body", Value::Bytes),
];

/// The old spellings, with the unit in the name, still read in target files and --set: each
/// is its one name with the unit in the value (`dirty_kb = 64` is `dirty = "64KiB"`).
const OLD_SPELLINGS: [(&str, &str, &str); 4] = [
    ("dirty_kb", "dirty", "KiB"),
    ("leak_kb", "leak", "KiB"),
    ("body_bytes", "body", "B"),
    ("preload_mb", "preload", "MiB"),
];

fn flag(knob: &str) -> String {
    NATIVE.iter().find(|(k, _)| *k == knob).map_or_else(|| knob.replace('_', "-"), |(_, f)| f.to_string())
}

impl Adapter for Lab {
    fn name(&self) -> &'static str {
        "lab"
    }

    fn default_value(&self, knob: &str) -> Option<&'static str> {
        // `webtune lab`'s own flag defaults (cli/args.rs LabArgs).
        Some(match knob {
            "workers" => "4",
            "max_requests" => "0",
            "min_spare" => "1",
            "keepalive" => "on",
            "keepalive_timeout" => "5s",
            "backlog" => "511",
            _ => return None,
        })
    }

    fn native(&self, knob: &str) -> Option<&'static str> {
        NATIVE.iter().find(|(k, _)| *k == knob).map(|(_, f)| *f)
    }

    fn prepare(&self, ctx: &Ctx, values: &Typed) -> anyhow::Result<Prepared> {
        // `program` names another webtune binary (tests run the library from theirs).
        let exe = match &ctx.file.program {
            Some(p) => p.clone(),
            None => std::env::current_exe()?.display().to_string(),
        };
        let mut args = vec!["lab".to_string(), "--listen".into(), format!("{}:{}", ctx.host, ctx.port)];
        // Every knob a flag, its value as written (the lab reads it).
        for (k, v) in values.pairs() {
            args.push(format!("--{}", flag(k)));
            args.push(v.to_string());
        }
        let spawn = Spawn::new("lab", &exe, args);
        Ok(Prepared {
            config_text: spawn.display(),
            spawns: vec![spawn],
            master: 0,
            error_logs: vec![ctx.dir.join("lab.log")],
            status_path: Some("/server-status?json".into()),
            front: None,
        })
    }

    fn respell(&self, name: &str, value: &str) -> Option<(&'static str, String)> {
        let (_, new, unit) = OLD_SPELLINGS.iter().find(|(old, _, _)| *old == name)?;
        value.trim().parse::<u64>().ok().map(|n| (*new, format!("{n}{unit}")))
    }

    fn check_value(&self, name: &str, value: &str) -> Result<(), String> {
        let Some((_, kind)) = KNOBS.iter().find(|(k, _)| *k == name) else {
            let names: Vec<&str> = KNOBS.iter().map(|(k, _)| *k).collect();
            let old = OLD_SPELLINGS.iter().find(|(old, _, _)| *old == name);
            return Err(match old {
                Some((_, new, unit)) => {
                    format!("{name} = {value:?}: expected a whole number of {unit} (or {new} = \"64{unit}\")")
                }
                None => match crate::input::nearest(name, &names) {
                    Some(near) => format!("{name}: the lab has no such knob: did you mean `{near}`?"),
                    None => format!("{name}: the lab has no such knob (its knobs: {})", names.join(", ")),
                },
            });
        };
        let checked = match kind {
            Value::Count => {
                value.parse::<u32>().map(drop).map_err(|_| format!("expected a whole number, e.g. {name} = 4"))
            }
            Value::Switch => match value {
                "on" | "off" => Ok(()),
                _ => Err("expected on or off".to_string()),
            },
            Value::Duration => crate::input::duration("", value).map(drop).map_err(|e| e.0),
            Value::Size if name == "preload" => crate::input::size_kib("", value)
                .map(drop)
                .map_err(|e| format!("{} (the lab always preloads; this is how much)", e.0)),
            Value::Size => crate::input::size_kib("", value).map(drop).map_err(|e| e.0),
            Value::Bytes => crate::input::size_bytes("", value).map(drop).map_err(|e| e.0),
        };
        checked.map_err(|why| format!("{name} = {value:?}: {why}"))
    }

    fn recommend(&self, _file: &TargetFile, values: &Typed) -> String {
        let flags: Vec<String> = values.pairs().map(|(k, v)| format!("--{} {v}", flag(k))).collect();
        format!("webtune lab {}", flags.join(" "))
    }

    fn counters(&self, body: &str) -> Option<serde_json::Value> {
        let mut v: serde_json::Value = serde_json::from_str(body).ok()?;
        // The per-worker list is long and the tuner needs the summary.
        v.as_object_mut()?.remove("workers");
        Some(v)
    }

    fn saturation(&self) -> &'static [&'static str] {
        &["server reached --workers"]
    }

    fn expected_workers(&self, values: &Typed) -> Option<usize> {
        values.start_workers().or(values.workers()).map_or(Some(4), Count::number)
    }
}
