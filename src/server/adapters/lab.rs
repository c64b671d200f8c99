//! `webtune lab`, the embedded pre-forking server: knobs are its flags.

use super::{Adapter, Ctx, Prepared};
use crate::server::TargetFile;
use crate::server::process::Spawn;

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

fn flag(knob: &str) -> String {
    NATIVE.iter().find(|(k, _)| *k == knob).map_or_else(|| knob.replace('_', "-"), |(_, f)| f.to_string())
}

impl Adapter for Lab {
    fn name(&self) -> &'static str {
        "lab"
    }

    fn native(&self, knob: &str) -> Option<&'static str> {
        NATIVE.iter().find(|(k, _)| *k == knob).map(|(_, f)| *f)
    }

    fn prepare(&self, ctx: &Ctx, values: &[(String, String)]) -> anyhow::Result<Prepared> {
        // `program` names another webtune binary (tests run the library from theirs).
        let exe = match &ctx.file.program {
            Some(p) => p.clone(),
            None => std::env::current_exe()?.display().to_string(),
        };
        let mut args = vec!["lab".to_string(), "--listen".into(), format!("{}:{}", ctx.host, ctx.port)];
        for (k, v) in values {
            if k == "preload" {
                anyhow::bail!("the lab has no preload switch: its parent always builds --preload-mb before forking");
            }
            args.push(format!("--{}", flag(k)));
            args.push(v.clone());
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

    fn recommend(&self, _file: &TargetFile, values: &[(String, String)]) -> String {
        let flags: Vec<String> = values.iter().map(|(k, v)| format!("--{} {v}", flag(k))).collect();
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

    fn expected_workers(&self, values: &[(String, String)]) -> Option<usize> {
        super::get(values, "start_workers").or(super::get(values, "workers")).unwrap_or("4").parse().ok()
    }
}
