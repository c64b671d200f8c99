//! The schema, as numbered migrations (PRAGMA user_version says how many ran).

use rusqlite::{Connection, TransactionBehavior};

/// Migration 1: runs (bench and tune share one id space), bench reports, tune experiments,
/// their points and the memory sampled in each repeat. (Named: tests build old databases.)
pub(super) const FIRST: &str = "CREATE TABLE runs (
        id INTEGER PRIMARY KEY,
        kind TEXT NOT NULL CHECK (kind IN ('bench', 'tune')),
        started_at TEXT NOT NULL,
        target TEXT NOT NULL,
        summary TEXT NOT NULL,
        status TEXT NOT NULL
     );
     CREATE TABLE bench (
        run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        requests_per_s REAL NOT NULL,
        p99_ms REAL,
        succeeded INTEGER NOT NULL,
        failed INTEGER NOT NULL,
        report TEXT NOT NULL
     );
     CREATE TABLE tune (
        run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
        strategy TEXT NOT NULL,
        target_file_text TEXT NOT NULL,
        options TEXT NOT NULL,
        outcome TEXT
     );
     CREATE TABLE points (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        step TEXT NOT NULL,
        settings TEXT NOT NULL,
        status TEXT NOT NULL,
        cause TEXT,
        requests_per_s REAL,
        p99_ms REAL,
        config_text TEXT,
        point TEXT NOT NULL
     );
     CREATE INDEX points_run ON points(run_id);
     CREATE TABLE memory (
        point_id INTEGER NOT NULL REFERENCES points(id) ON DELETE CASCADE,
        repeat INTEGER NOT NULL,
        workers INTEGER NOT NULL,
        worker_uss_max_kib INTEGER NOT NULL,
        worker_uss_mean_kib INTEGER NOT NULL,
        worker_shared_mean_kib INTEGER NOT NULL,
        parent_uss_kib INTEGER NOT NULL,
        parent_shared_kib INTEGER NOT NULL,
        pss_total_kib INTEGER NOT NULL,
        PRIMARY KEY (point_id, repeat)
     );";

const MIGRATIONS: &[&str] = &[
    FIRST,
    // 2: where each point's server and client ran (JSON: server, client, shared) and the
    // client's largest share of the machine's CPU (0-1). Points stored before stay NULL.
    "ALTER TABLE points ADD COLUMN placement TEXT;
     ALTER TABLE points ADD COLUMN client_share REAL;",
    // 3: the webtune process that writes a run still going ("pid starttime bootid host"), so
    // a run whose writer was killed outright is told from one still running.
    "ALTER TABLE runs ADD COLUMN owner TEXT;",
];

/// Runs the migrations not yet run. The version is read inside an IMMEDIATE transaction so
/// two processes opening a new database at once cannot both create the tables: the second
/// waits for the write lock (busy timeout) and then sees the work done.
/// The schema version this webtune writes (`PRAGMA user_version`).
pub const VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings the database to `VERSION`: the migrations it lacks, all in one transaction.
pub fn migrate(conn: &mut Connection) -> rusqlite::Result<()> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let done: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    for sql in MIGRATIONS.iter().skip(done as usize) {
        tx.execute_batch(sql)?;
    }
    if (done as usize) < MIGRATIONS.len() {
        tx.pragma_update(None, "user_version", MIGRATIONS.len() as i64)?;
    }
    tx.commit()
}
