//! The history: every bench run and every tune experiment with each of its points, in an
//! embedded SQLite database (WAL, one transaction per point, so a crash or Ctrl-C loses
//! nothing finished and two webtune processes can write at once).

mod schema;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use rusqlite::{Connection, OptionalExtension, params};
use serde::{Deserialize, Serialize};

use crate::aggregate::BenchReport;
use crate::input::InputError;
use crate::procmem::procs;
use crate::tune::{Outcome, Point};

/// The database: --db, else $WEBTUNE_DB, else $XDG_DATA_HOME/webtune/webtune.db (by default
/// ~/.local/share/webtune/webtune.db).
/// The database must be a regular file, or not exist yet: SQLite beside a device or a FIFO
/// (`--db /dev/null`) would create its journal next to it (`/dev/null-journal`).
/// A database whose schema is newer than this webtune's is neither read nor written. Checked
/// read-only, so a run can be refused before its load rather than lose its result after.
pub fn check_path(path: &Path) -> Result<(), InputError> {
    match std::fs::metadata(path) {
        Ok(m) if !m.is_file() => {
            return Err(InputError(format!(
                "store {}: not a regular file (a device, FIFO or directory); give --db the path of a database file",
                path.display()
            )));
        }
        Ok(_) => {}
        Err(_) => return Ok(()),
    }
    let flags = rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX;
    // Any other trouble (corrupt, locked) is Store::open's to report, after the run is printed.
    let version = Connection::open_with_flags(path, flags)
        .and_then(|c| c.pragma_query_value(None, "user_version", |r| r.get::<_, i64>(0)))
        .unwrap_or(0);
    if version > schema::VERSION {
        return Err(too_new(path, version));
    }
    Ok(())
}

fn too_new(path: &Path, version: i64) -> InputError {
    InputError(format!(
        "store {}: its schema is version {version}, newer than this webtune's {}: use a newer webtune, or another --db",
        path.display(),
        schema::VERSION
    ))
}

/// The history database: `--db`, else $WEBTUNE_DB, else webtune/webtune.db in $XDG_DATA_HOME
/// (~/.local/share by default).
pub fn default_path(flag: Option<&Path>) -> PathBuf {
    if let Some(p) = flag {
        return p.to_path_buf();
    }
    if let Some(p) = std::env::var_os("WEBTUNE_DB").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    let data = std::env::var_os("XDG_DATA_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))
        .unwrap_or_else(|| PathBuf::from("."));
    data.join("webtune").join("webtune.db")
}

/// A stored start time in one format, to the second (`2026-11-25T23:15:38Z`): bench runs
/// store milliseconds, tune runs seconds. Text that is not RFC 3339 stays as it is.
fn in_seconds(started_at: String) -> String {
    match crate::input::rfc3339(&started_at) {
        Some(t) => humantime::format_rfc3339_seconds(t).to_string(),
        None => started_at,
    }
}

/// An open history database.
pub struct Store {
    conn: Connection,
    pub path: PathBuf,
}

/// One line of `webtune runs`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRow {
    pub id: i64,
    /// "bench" or "tune".
    pub kind: String,
    pub started_at: String,
    /// The URL (bench) or the target file (tune).
    pub target: String,
    /// A one-line summary.
    pub summary: String,
    /// "done", "failed" (a bench run without one successful request, a tune whose every
    /// trial failed), "running" (a tune still going), "interrupted" (Ctrl-C: what was measured
    /// is kept), "killed" (its webtune process died without finishing: SIGKILL, OOM, power loss).
    pub status: String,
}

/// A run as the history commands take it: its id, or `last`, `last~1`, `last~N` (the
/// newest run, the one before it, N before it), as git names commits; or the same among one
/// kind's runs: `bench`, `bench~1`, `tune`, `tune~N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunRef {
    Id(i64),
    /// N runs before the newest, of one kind ("bench", "tune") or of any.
    Last {
        kind: Option<&'static str>,
        back: u64,
    },
}

/// The kinds of run, as `RunRef` names them.
const KINDS: [&str; 2] = ["bench", "tune"];

impl std::str::FromStr for RunRef {
    type Err = String;

    fn from_str(text: &str) -> Result<RunRef, String> {
        let bad = || {
            format!(
                "{text:?} is not a run: give its id (12), last, or last~N (last~1 is the one before last); \
                 or a kind's: bench, bench~1, tune, tune~1"
            )
        };
        let t = text.trim();
        let (name, back) = match t.split_once('~') {
            Some((name, back)) => (name, back.parse().map_err(|_| bad())?),
            None => (t, 0),
        };
        if name == "last" {
            return Ok(RunRef::Last { kind: None, back });
        }
        if let Some(kind) = KINDS.iter().find(|k| **k == name) {
            return Ok(RunRef::Last { kind: Some(kind), back });
        }
        match t.parse() {
            Ok(id) if id > 0 => Ok(RunRef::Id(id)),
            _ => Err(bad()),
        }
    }
}

impl std::fmt::Display for RunRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunRef::Id(id) => write!(f, "{id}"),
            RunRef::Last { kind, back: 0 } => write!(f, "{}", kind.unwrap_or("last")),
            RunRef::Last { kind, back } => write!(f, "{}~{back}", kind.unwrap_or("last")),
        }
    }
}

/// Which runs `runs` lists: a kind, a target substring, a time window.
#[derive(Debug, Clone, Default)]
pub struct RunFilter<'a> {
    pub kind: Option<&'a str>,
    pub target: Option<&'a str>,
    pub since: Option<std::time::SystemTime>,
    pub until: Option<std::time::SystemTime>,
}

/// Switches a database to WAL. SQLite does not call the busy handler for this switch (it
/// could deadlock), so several processes creating one database at once retry here.
fn set_wal(conn: &Connection) -> rusqlite::Result<()> {
    let deadline = std::time::Instant::now() + Duration::from_secs(3);
    loop {
        match conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get::<_, String>(0)) {
            Ok(_) => return Ok(()),
            Err(rusqlite::Error::SqliteFailure(e, _))
                if e.code == rusqlite::ErrorCode::DatabaseBusy && std::time::Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(5));
            }
            Err(e) => return Err(e),
        }
    }
}

impl Store {
    /// Opens (creating and migrating) the database; errors name the file.
    pub fn open(path: &Path) -> anyhow::Result<Store> {
        check_path(path)?;
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("store {}: cannot create its directory", path.display()))?;
        }
        let wrap = |e: rusqlite::Error| anyhow::anyhow!("store {}: {e}", path.display());
        let mut conn = Connection::open(path).map_err(wrap)?;
        conn.busy_timeout(Duration::from_secs(3)).map_err(wrap)?;
        // Again, now that it is open: another webtune may have migrated it meanwhile.
        let version: i64 = conn.pragma_query_value(None, "user_version", |r| r.get(0)).map_err(wrap)?;
        if version > schema::VERSION {
            return Err(too_new(path, version).into());
        }
        set_wal(&conn).map_err(wrap)?;
        conn.pragma_update(None, "foreign_keys", "ON").map_err(wrap)?;
        schema::migrate(&mut conn).map_err(wrap)?;
        Ok(Store { conn, path: path.to_path_buf() })
    }

    fn err(&self, e: rusqlite::Error) -> anyhow::Error {
        anyhow::anyhow!("store {}: {e}", self.path.display())
    }

    /// Saves a finished bench run; returns its id.
    pub fn save_bench(&mut self, report: &BenchReport) -> anyhow::Result<i64> {
        let r = &report.result;
        let p99 = r.latency_ms.total.as_ref().map(|l| l.p99);
        let summary = format!(
            "{} req/s, p99 {} ms, {} ok, {} failed, -c {}",
            fmt2(r.requests_per_s),
            p99.map_or("-".into(), fmt2),
            r.succeeded,
            r.failed,
            report.options.connections
        );
        let json = serde_json::to_string(report)?;
        let status = match (report.interrupted, r.succeeded) {
            (true, _) => "interrupted",
            (false, 0) => "failed",
            (false, _) => "done",
        };
        let tx = self.conn.transaction().map_err(|e| anyhow::anyhow!("store: {e}"))?;
        tx.execute(
            "INSERT INTO runs (kind, started_at, target, summary, status) VALUES ('bench', ?1, ?2, ?3, ?4)",
            params![report.started_at, report.target.url, summary, status],
        )
        .and_then(|_| {
            let id = tx.last_insert_rowid();
            tx.execute(
                "INSERT INTO bench (run_id, requests_per_s, p99_ms, succeeded, failed, report) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![id, r.requests_per_s, p99, r.succeeded as i64, r.failed as i64, json],
            )?;
            Ok(id)
        })
        .and_then(|id| tx.commit().map(|()| id))
        .map_err(|e| self.err(e))
    }

    /// Starts a tune experiment; its points follow one by one.
    pub fn begin_tune(
        &mut self,
        target_file: &str,
        strategy: &str,
        file_text: &str,
        options: &serde_json::Value,
    ) -> anyhow::Result<i64> {
        let started = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
        // The host too: a database shared between machines must not judge another's runs.
        let owner = procs::identity(std::process::id() as i32).map(|id| format!("{id} {}", hostname()));
        self.conn
            .execute(
                "INSERT INTO runs (kind, started_at, target, summary, status, owner) VALUES ('tune', ?1, ?2, ?3, 'running', ?4)",
                params![started, target_file, format!("{strategy}: measuring"), owner],
            )
            .map_err(|e| self.err(e))?;
        let id = self.conn.last_insert_rowid();
        self.conn
            .execute(
                "INSERT INTO tune (run_id, strategy, target_file_text, options) VALUES (?1, ?2, ?3, ?4)",
                params![id, strategy, file_text, options.to_string()],
            )
            .map_err(|e| self.err(e))?;
        Ok(id)
    }

    /// Saves one measured point (its own transaction) with its memory samples.
    pub fn save_point(&mut self, run: i64, p: &Point) -> anyhow::Result<i64> {
        let json = serde_json::to_string(p)?;
        let (rps, p99) = if p.ok() { (Some(p.rps()), Some(p.p99())) } else { (None, None) };
        let tx = self.conn.transaction().map_err(|e| anyhow::anyhow!("store: {e}"))?;
        let result = tx
            .execute(
                "INSERT INTO points (run_id, step, settings, status, cause, requests_per_s, p99_ms, config_text, point,
                 placement, client_share)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    run,
                    p.step,
                    serde_json::to_string(&p.settings)?,
                    if p.ok() { "ok" } else { "failed" },
                    p.cause(),
                    rps,
                    p99,
                    p.config_text,
                    json,
                    p.placement.as_ref().map(serde_json::to_string).transpose()?,
                    p.client_share
                ],
            )
            .and_then(|_| {
                let id = tx.last_insert_rowid();
                for (i, s) in p.samples.iter().enumerate() {
                    if let Some(m) = &s.memory {
                        tx.execute(
                            "INSERT INTO memory (point_id, repeat, workers, worker_uss_max_kib, worker_uss_mean_kib,
                             worker_shared_mean_kib, parent_uss_kib, parent_shared_kib, pss_total_kib)
                             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                            params![
                                id,
                                i as i64,
                                m.workers as i64,
                                m.worker_uss_max_kib as i64,
                                m.worker_uss_mean_kib as i64,
                                m.worker_shared_mean_kib as i64,
                                m.parent_uss_kib as i64,
                                m.parent_shared_kib as i64,
                                m.pss_total_kib as i64
                            ],
                        )?;
                    }
                }
                Ok(id)
            })
            .and_then(|id| tx.commit().map(|()| id));
        result.map_err(|e| self.err(e))
    }

    /// Records the experiment's conclusion.
    pub fn finish_tune(&mut self, run: i64, o: &Outcome) -> anyhow::Result<()> {
        // Stopped by the time budget or Ctrl-C, or with knobs not judged: not a finished tune.
        let status = if o.cut_short() { "interrupted" } else { "done" };
        let summary = format!(
            "{}: {}",
            o.strategy,
            o.evidence.iter().map(|e| format!("{}={}", e.knob, e.value)).collect::<Vec<_>>().join(" ")
        );
        self.conn
            .execute("UPDATE tune SET outcome = ?2 WHERE run_id = ?1", params![run, serde_json::to_string(o)?])
            .and_then(|_| {
                self.conn
                    .execute("UPDATE runs SET status = ?2, summary = ?3 WHERE id = ?1", params![run, status, summary])
            })
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Marks "killed" every run still "running" whose webtune process is gone: it will never
    /// finish. Its points stay. Returns the runs so marked.
    pub fn mark_killed(&self) -> anyhow::Result<Vec<i64>> {
        let mut stmt = self
            .conn
            .prepare("SELECT id, owner FROM runs WHERE status = 'running' AND owner IS NOT NULL")
            .map_err(|e| self.err(e))?;
        let running = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.err(e))?;
        let here = hostname();
        let dead: Vec<i64> = running
            .into_iter()
            .filter(|(_, owner)| {
                owner.split_whitespace().nth(3) == Some(here.as_str()) && !procs::identity_alive(owner)
            })
            .map(|(id, _)| id)
            .collect();
        for id in &dead {
            // Only if still running: the owner may have finished it meanwhile.
            self.conn
                .execute(
                    "UPDATE runs SET status = 'killed', summary = summary || ' (webtune was killed: no outcome)'
                     WHERE id = ?1 AND status = 'running'",
                    [id],
                )
                .map_err(|e| self.err(e))?;
        }
        Ok(dead)
    }

    /// Runs, newest first, filtered by kind, a target substring and a start time window. A
    /// run whose writer is gone reads as "killed" (`mark_killed`); a finished run that
    /// served nothing reads as "failed", even one stored as "done" before that status was.
    pub fn runs(&self, filter: &RunFilter) -> anyhow::Result<Vec<RunRow>> {
        self.mark_killed()?;
        let mut stmt = self
            .conn
            .prepare(
                "SELECT r.id, r.kind, r.started_at, r.target, r.summary,
                   CASE WHEN r.status = 'done' AND (b.succeeded = 0 OR (r.kind = 'tune'
                     AND EXISTS (SELECT 1 FROM points p WHERE p.run_id = r.id)
                     AND NOT EXISTS (SELECT 1 FROM points p WHERE p.run_id = r.id AND p.status = 'ok')))
                   THEN 'failed' ELSE r.status END
                 FROM runs r LEFT JOIN bench b ON b.run_id = r.id
                 WHERE (?1 IS NULL OR r.kind = ?1) AND (?2 IS NULL OR instr(r.target, ?2) > 0)
                 ORDER BY r.id DESC",
            )
            .map_err(|e| self.err(e))?;
        let rows = stmt
            .query_map(params![filter.kind, filter.target], |r| {
                Ok(RunRow {
                    id: r.get(0)?,
                    kind: r.get(1)?,
                    started_at: in_seconds(r.get(2)?),
                    target: r.get(3)?,
                    summary: r.get(4)?,
                    status: r.get(5)?,
                })
            })
            .and_then(|rows| rows.collect::<Result<Vec<RunRow>, _>>())
            .map_err(|e| self.err(e))?;
        if filter.since.is_none() && filter.until.is_none() {
            return Ok(rows);
        }
        // Compared as times: start times are UTC, a filter may carry any offset.
        Ok(rows
            .into_iter()
            .filter(|r| {
                let Some(started) = crate::input::rfc3339(&r.started_at) else { return false };
                filter.since.is_none_or(|s| started >= s) && filter.until.is_none_or(|u| started < u)
            })
            .collect())
    }

    /// The id a reference names: an id as it is, `last~N` the (N+1)th newest run. A
    /// reference past the oldest run is bad input.
    pub fn resolve(&self, run: RunRef) -> anyhow::Result<i64> {
        let (kind, back) = match run {
            RunRef::Id(id) => return Ok(id),
            RunRef::Last { kind, back } => (kind, back),
        };
        let newest = self
            .conn
            .query_row(
                "SELECT id FROM runs WHERE ?2 IS NULL OR kind = ?2 ORDER BY id DESC LIMIT 1 OFFSET ?1",
                rusqlite::params![i64::try_from(back).unwrap_or(i64::MAX), kind],
                |r| r.get(0),
            )
            .optional()
            .map_err(|e| self.err(e))?;
        match newest {
            Some(id) => Ok(id),
            None => {
                let count = self.count(kind)?;
                Err(crate::input::InputError(format!(
                    "no run {run}: {} holds {count} {}run{}",
                    self.path.display(),
                    kind.map_or(String::new(), |k| format!("{k} ")),
                    if count == 1 { "" } else { "s" }
                ))
                .into())
            }
        }
    }

    /// How many runs there are of `kind` (of any, None).
    pub fn count(&self, kind: Option<&str>) -> anyhow::Result<i64> {
        self.conn
            .query_row("SELECT count(*) FROM runs WHERE ?1 IS NULL OR kind = ?1", [kind], |r| r.get(0))
            .map_err(|e| self.err(e))
    }

    /// Run `id` in full (report, or points and outcome); None when there is no such run.
    pub fn run(&self, id: i64) -> anyhow::Result<Option<Stored>> {
        let row = self.runs(&RunFilter::default())?.into_iter().find(|r| r.id == id);
        let Some(row) = row else { return Ok(None) };
        if row.kind == "bench" {
            let json: String = self
                .conn
                .query_row("SELECT report FROM bench WHERE run_id = ?1", [id], |r| r.get(0))
                .map_err(|e| self.err(e))?;
            let report = serde_json::from_str(&json).with_context(|| format!("run {id}: stored report unreadable"))?;
            return Ok(Some(Stored::Bench { row, report: Box::new(report) }));
        }
        let (strategy, outcome): (String, Option<String>) = self
            .conn
            .query_row("SELECT strategy, outcome FROM tune WHERE run_id = ?1", [id], |r| Ok((r.get(0)?, r.get(1)?)))
            .optional()
            .map_err(|e| self.err(e))?
            .unwrap_or_default();
        let mut stmt =
            self.conn.prepare("SELECT point FROM points WHERE run_id = ?1 ORDER BY id").map_err(|e| self.err(e))?;
        let points = stmt
            .query_map([id], |r| r.get::<_, String>(0))
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.err(e))?
            .iter()
            .filter_map(|j| serde_json::from_str(j).ok())
            .collect();
        let outcome = outcome.and_then(|o| serde_json::from_str(&o).ok());
        Ok(Some(Stored::Tune { row, strategy, points, outcome: outcome.map(Box::new) }))
    }
}

/// A stored run, whole.
#[derive(Debug, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Stored {
    Bench { row: RunRow, report: Box<BenchReport> },
    Tune { row: RunRow, strategy: String, points: Vec<Point>, outcome: Option<Box<Outcome>> },
}

impl Stored {
    /// The point that stands for a tune run when it is compared: its recommendation's, else
    /// its first successful point (None for a bench run, or a tune run without one).
    pub fn standing_point(&self) -> Option<&Point> {
        match self {
            Stored::Bench { .. } => None,
            Stored::Tune { points, outcome, .. } => {
                outcome.as_ref().and_then(|o| o.best()).or_else(|| points.iter().find(|p| p.ok()))
            }
        }
    }
}

/// This machine's name, as the kernel has it ("-" when unknown: one word, always).
fn hostname() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let name = name.trim();
    if name.is_empty() || name.contains(char::is_whitespace) { "-".into() } else { name.into() }
}

fn fmt2(v: f64) -> String {
    format!("{v:.2}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::cpus::{CpuSet, Placement};

    #[test]
    fn a_database_from_before_placements_opens_and_keeps_its_points() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        // A database as the first schema left it, with a point written then.
        let old = Connection::open(&path).unwrap();
        old.execute_batch(schema::FIRST).unwrap();
        old.pragma_update(None, "user_version", 1).unwrap();
        let mut before = serde_json::to_value(crate::tune::point::tests::point(&[100.0])).unwrap();
        let fields = before.as_object_mut().unwrap();
        fields.remove("placement");
        fields.remove("client_share");
        old.execute(
            "INSERT INTO runs (kind, started_at, target, summary, status) VALUES ('tune', 'then', 't.toml', 's', 'done')",
            [],
        )
        .unwrap();
        old.execute(
            "INSERT INTO points (run_id, step, settings, status, point) VALUES (1, 't', '[]', 'ok', ?1)",
            [before.to_string()],
        )
        .unwrap();
        drop(old);

        let mut store = Store::open(&path).unwrap();
        let mut now = crate::tune::point::tests::point(&[120.0]);
        now.placement = Some(Placement::shared(&CpuSet::parse("", "0-1").unwrap()));
        now.client_share = Some(0.125);
        store.save_point(1, &now).unwrap();
        let Some(Stored::Tune { points, .. }) = store.run(1).unwrap() else { panic!("no tune run 1") };
        assert_eq!(points.len(), 2, "the old point is read, and the new one beside it");
        assert_eq!((points[0].placement.as_ref(), points[0].client_share), (None, None));
        assert_eq!(points[1].placement, now.placement);
        let (placement, share): (Option<String>, Option<f64>) = store
            .conn
            .query_row("SELECT placement, client_share FROM points ORDER BY id DESC LIMIT 1", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .unwrap();
        assert_eq!(placement.as_deref(), Some(r#"{"server":"0-1","client":"0-1","shared":true}"#));
        assert_eq!(share, Some(0.125));
    }

    #[test]
    fn a_run_whose_writer_is_gone_reads_killed_unless_it_ran_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Store::open(&dir.path().join("h.db")).unwrap();
        let options = serde_json::json!({});
        let live = s.begin_tune("live.toml", "one-at-a-time", "", &options).unwrap();
        let dead = s.begin_tune("dead.toml", "one-at-a-time", "", &options).unwrap();
        let elsewhere = s.begin_tune("elsewhere.toml", "one-at-a-time", "", &options).unwrap();
        let me = procs::identity(std::process::id() as i32).unwrap();
        let (pid, start) = me.split_once(' ').unwrap();
        let start: u64 = start.split_whitespace().next().unwrap().parse().unwrap();
        let gone = format!("{pid} {} {} {}", start + 1, me.split_whitespace().nth(2).unwrap(), hostname());
        s.conn.execute("UPDATE runs SET owner = ?2 WHERE id = ?1", params![dead, gone]).unwrap();
        let other = format!("{pid} {} {} another-host", start + 1, me.split_whitespace().nth(2).unwrap());
        s.conn.execute("UPDATE runs SET owner = ?2 WHERE id = ?1", params![elsewhere, other]).unwrap();
        let status =
            |s: &Store, id| s.runs(&RunFilter::default()).unwrap().into_iter().find(|r| r.id == id).unwrap().status;
        assert_eq!(status(&s, live), "running");
        assert_eq!(status(&s, dead), "killed");
        assert_eq!(status(&s, elsewhere), "running", "another machine's run cannot be judged here");
        // Marked once, for good.
        assert_eq!(s.mark_killed().unwrap(), Vec::<i64>::new());
        assert_eq!(status(&s, dead), "killed");
    }
}
