//! The HdrHistogram interval log (the format HdrHistogram's tools read): one line per interval
//! with the V2-compressed, base64 histogram of request latencies in microseconds.
//!
//! Intervals arrive from the engine threads over a channel; they are merged per interval and
//! written once no thread can still add to them (an interval closes at most one request
//! timeout after its end), so the file is in time order and memory stays flat.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context;
use hdrhistogram::Histogram;
use hdrhistogram::serialization::V2DeflateSerializer;
use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};

use crate::aggregate::intervals::IntervalMsg;

/// The thread that writes the interval log while the run goes on.
pub struct HdrLogWriter {
    handle: JoinHandle<anyhow::Result<()>>,
}

/// The log's time frame.
#[derive(Clone, Copy)]
pub struct Timing {
    /// The run's start, on the monotonic clock the engine stamps records with.
    pub origin: Instant,
    /// The same moment on the wall clock (the log's StartTime and BaseTime).
    pub wall_origin: SystemTime,
    pub interval: Duration,
    /// How long after its end an interval may still grow (a request timeout, and a margin).
    pub grace: Duration,
}

impl HdrLogWriter {
    /// Creates the file now (so a bad path fails before the run) and writes intervals from
    /// `rx` as they close.
    pub fn start(path: &Path, rx: Receiver<IntervalMsg>, timing: Timing) -> anyhow::Result<HdrLogWriter> {
        let file = crate::safe_write::create(path)?;
        let path = path.to_path_buf();
        let handle = std::thread::Builder::new()
            .name("webtune-hdrlog".into())
            .spawn(move || write_log(file, &path, rx, timing))?;
        Ok(HdrLogWriter { handle })
    }

    /// Waits until every sender is gone and the log is complete.
    pub fn finish(self) -> anyhow::Result<()> {
        self.handle.join().map_err(|_| anyhow::anyhow!("the HdrHistogram log writer panicked"))?
    }
}

fn write_log(file: File, path: &Path, rx: Receiver<IntervalMsg>, timing: Timing) -> anyhow::Result<()> {
    let Timing { origin, wall_origin, interval, grace } = timing;
    let ctx = || format!("cannot write {}", path.display());
    let mut out = BufWriter::new(file);
    let mut serializer = V2DeflateSerializer::new();
    let mut log = IntervalLogWriterBuilder::new()
        .add_comment(concat!("webtune ", env!("CARGO_PKG_VERSION"), " request latency, microseconds"))
        .with_start_time(wall_origin)
        .with_base_time(wall_origin)
        .with_max_value_divisor(1000.0)
        .begin_log_with(&mut out, &mut serializer)
        .with_context(ctx)?;
    let tag: Option<Tag> = None;
    let mut open: BTreeMap<u64, Histogram<u64>> = BTreeMap::new();
    let mut written_upto: Option<u64> = None;
    let secs = interval.as_secs_f64();
    let write = |log: &mut hdrhistogram::serialization::interval_log::IntervalLogWriter<_, _>,
                 index: u64,
                 h: &Histogram<u64>|
     -> anyhow::Result<()> {
        let start = Duration::from_secs_f64(index as f64 * secs);
        log.write_histogram(h, start, interval, tag).map_err(|e| anyhow::anyhow!("{e:?}")).with_context(ctx)
    };
    loop {
        let disconnected = match rx.recv_timeout(Duration::from_millis(200)) {
            Ok((index, h)) => {
                if written_upto.is_some_and(|w| index <= w) {
                    // Later than the grace allowed: write it as an extra line for its interval.
                    write(&mut log, index, &h)?;
                } else {
                    match open.get_mut(&index) {
                        Some(acc) => acc.add(&h).expect("same bounds"),
                        None => {
                            open.insert(index, h);
                        }
                    }
                }
                false
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => true,
        };
        let elapsed = origin.elapsed();
        while let Some(entry) = open.first_entry() {
            let closes = Duration::from_secs_f64((*entry.key() + 1) as f64 * secs) + grace;
            if !disconnected && elapsed < closes {
                break;
            }
            let (index, h) = entry.remove_entry();
            write(&mut log, index, &h)?;
            written_upto = Some(index);
        }
        if disconnected {
            break;
        }
    }
    drop(log);
    out.flush().with_context(ctx)
}
