//! The raw command line, as clap parses it. Validation into plans happens in the command
//! modules, so every check and its error message live in one place.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

use crate::report::Format;
use crate::store::RunRef;

#[derive(Debug, Parser)]
#[command(
    name = "webtune",
    version = crate::VERSION,
    about = "Find, by measurement, the server configuration that serves the most within its memory",
    after_help = super::exit::exit_status_help()
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,

    /// `webtune --db F runs`, as before --db moved onto the commands that open the history.
    #[arg(long, hide = true)]
    pub db: Option<PathBuf>,
}

/// --db, on the commands that open the history (and only those).
#[derive(Debug, Args)]
pub struct DbArg {
    /// The history database (default: $WEBTUNE_DB, else ~/.local/share/webtune/webtune.db).
    #[arg(long, value_name = "FILE")]
    pub db: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load-test a URL: closed loop over N connections, latency in HDR histograms.
    #[command(after_help = super::exit::exit_status_help())]
    Bench(Box<BenchArgs>),
    /// Combine the --json reports of runs made at once from several machines (exact percentiles).
    Merge(MergeArgs),
    /// Find the configuration that serves the most within the memory: launch the target in
    /// each configuration a strategy picks, measure, and recommend with the evidence.
    Tune(TuneArgs),
    /// Start a target file's server (private run directory, own process groups), print its
    /// address and pids, and run until Ctrl-C; then stop it.
    Launch(LaunchArgs),
    /// List the stored runs (bench runs and tune experiments), newest first.
    Runs(RunsArgs),
    /// Show one stored run.
    Show(ShowArgs),
    /// Compare two stored runs: each metric before and after, the % change, and whether it
    /// exceeds the runs' spread.
    #[command(after_help = super::exit::exit_status_help())]
    Compare(CompareArgs),
    /// Export a stored run as JSON, CSV or markdown.
    Export(ExportArgs),
    /// Write a stored run as one self-contained HTML file with charts.
    Report(ReportArgs),
    /// Write a static workload: a SPECweb96 file set (four size classes of nine files per
    /// directory, directories scaled from --ops) and urls.txt, a weighted URL list with
    /// SPECweb96's class mix (35/50/14/1 %) and its popularity within a class.
    Fileset(FilesetArgs),
    /// Write a target file from a server that is already there: its configuration file
    /// (--config) or its running master (--pid, read-only: nothing is sent to it). The base is
    /// your own configuration; the knobs are ranges around what it sets now.
    Init(InitArgs),
    /// Write a weighted URL list (for bench --urls) from a server's access logs: each GET or
    /// HEAD request answered 2xx or 3xx once, its count its weight, most frequent first.
    Urls(UrlsArgs),
    /// Run the embedded pre-forking test server (Apache prefork + mod_perl, reproduced).
    Lab(LabArgs),
    /// What a server's processes really cost: RSS, PSS, USS, shared; totals; capacity.
    Mem(MemArgs),
    /// System calls per request, from strace on the server while requests are driven.
    Syscalls(SyscallsArgs),
    /// Print a shell completion script (e.g. webtune completions bash > /etc/bash_completion.d/webtune).
    Completions(CompletionsArgs),
    /// Print the manual page webtune(1) as roff (webtune manpage | man -l -).
    Manpage(ManpageArgs),
}

/// Files the report is written to as well, each in its own format, while the text stays on
/// the terminal (oha's -o, hyperfine's --export-*): `-o FILE` and an `--export-NAME FILE` for
/// each format `Format::exported` lists.
#[derive(Debug, Default)]
pub struct OutputArgs {
    /// `-o`: the format is the one the file's extension names.
    pub output: Vec<PathBuf>,
    /// `--export-NAME`: each exported format with its files, in `Format::ALL`'s order.
    pub exports: Vec<(Format, Vec<PathBuf>)>,
}

impl clap::FromArgMatches for OutputArgs {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let paths = |id: &str| m.get_many::<PathBuf>(id).map(|p| p.cloned().collect()).unwrap_or_default();
        let exports = Format::exported().map(|f| (f, paths(f.export_flag().unwrap_or_default()))).collect();
        Ok(OutputArgs { output: paths("output"), exports })
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for OutputArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        // -o's help names the exported formats' first extensions, then text's.
        let extensions: Vec<String> =
            Format::exported().chain([Format::Text]).map(|f| format!(".{}", f.extensions()[0])).collect();
        let output = clap::Arg::new("output")
            .short('o')
            .long("output")
            .value_name("FILE")
            .action(clap::ArgAction::Append)
            .value_parser(clap::value_parser!(PathBuf))
            .help(format!(
                "Write the report to FILE too, in the format its extension names ({}); repeatable. A symbolic link or a device is refused, not followed",
                extensions.join(", ")
            ));
        Format::exported().fold(cmd.arg(output), |cmd, f| {
            let flag = f.export_flag().unwrap_or_default();
            cmd.arg(
                clap::Arg::new(flag)
                    .long(flag)
                    .value_name("FILE")
                    .action(clap::ArgAction::Append)
                    .value_parser(clap::value_parser!(PathBuf))
                    .help(format!("Write the report as {} to FILE too (repeatable)", f.described())),
            )
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// `webtune export`'s stdout format: a `--NAME` flag for each format `Format::exported`
/// lists, one at the most.
#[derive(Debug, Default)]
pub struct StoredFormat(pub Option<Format>);

impl clap::FromArgMatches for StoredFormat {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        Ok(StoredFormat(Format::exported().find(|f| m.get_flag(f.name()))))
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl Args for StoredFormat {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let names: Vec<&'static str> = Format::exported().map(Format::name).collect();
        let cmd = cmd.group(clap::ArgGroup::new("format").args(names));
        Format::exported().fold(cmd, |cmd, f| {
            cmd.arg(clap::Arg::new(f.name()).long(f.name()).action(clap::ArgAction::SetTrue).help(f.stored_help()))
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Args)]
pub struct ManpageArgs {
    /// Write webtune.1 and a page per command (webtune-bench.1...) into this directory instead.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(flatten)]
    pub store: DbArg,

    /// Only bench runs or only tune experiments.
    #[arg(long, value_parser = ["bench", "tune"])]
    pub kind: Option<String>,

    /// Only runs whose target (URL or target file) contains this.
    #[arg(long)]
    pub target: Option<String>,

    /// Only runs started at or after this time: RFC 3339 with Z or an offset
    /// (2026-11-25T12:00:00+01:00), a date (2026-11-25: midnight UTC), or a time ago (1h, 2d).
    #[arg(long, value_name = "TIME")]
    pub since: Option<String>,

    /// Only runs started before this time (as --since).
    #[arg(long, value_name = "TIME")]
    pub until: Option<String>,

    /// Print the list as JSON (schema/runs.v1.json) instead of a table.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    #[command(flatten)]
    pub store: DbArg,

    /// The run: its id (as `webtune runs` lists it), last, or last~N (N runs before the last);
    /// bench, bench~N, tune, tune~N among one kind's runs.
    #[arg(value_name = "RUN")]
    pub id: RunRef,
    /// Print the stored run whole as JSON (a bench run's report, or a tune's points and outcome).
    #[arg(long)]
    pub json: bool,
    /// A tune's diffs of your configuration files only (as `tune --diff` wrote them).
    #[arg(long, conflicts_with = "json")]
    pub diff: bool,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct CompareArgs {
    #[command(flatten)]
    pub store: DbArg,

    /// The run before: an id, last, last~N, or a kind's (compare bench~1 bench: the two newest
    /// bench runs, whatever ran between them).
    #[arg(value_name = "BEFORE")]
    pub before: RunRef,
    /// The run after: an id, last, last~N, bench, bench~N, tune or tune~N.
    #[arg(value_name = "AFTER")]
    pub after: RunRef,
    /// Print JSON (schema/compare.v1.json): {"schema", "before", "after", "rows", "thresholds"}.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub output: OutputArgs,

    /// A regression gate (exit 3 when it holds), repeatable: a signed change from the run
    /// before to the run after, e.g. 'rps < -5%', 'p99 > +10%', or an absolute threshold on
    /// the run after, as bench --fail-if. Tune runs are judged on rps, p50, p99 and ttfb.p99.
    #[arg(long = "fail-if", value_name = "EXPR")]
    pub fail_if: Vec<String>,
}

#[derive(Debug, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub store: DbArg,

    /// The run: its id, last, last~N, bench, bench~N, tune or tune~N.
    #[arg(value_name = "RUN")]
    pub id: RunRef,
    #[command(flatten)]
    pub format: StoredFormat,

    #[command(flatten)]
    pub output: OutputArgs,
}

#[derive(Debug, Args)]
pub struct ReportArgs {
    #[command(flatten)]
    pub store: DbArg,

    /// The run: its id, last, last~N, bench, bench~N, tune or tune~N.
    #[arg(value_name = "RUN")]
    pub id: RunRef,
    /// Where to write the HTML file. Default: webtune-ID.html in the current directory.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
}

#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("from").required(true).args(["config", "pid"])))]
pub struct InitArgs {
    /// The server's main configuration file (apache2.conf, nginx.conf, php-fpm.conf, an
    /// uwsgi ini, a gunicorn.conf.py).
    #[arg(long, value_name = "PATH")]
    pub config: Option<PathBuf>,

    /// A running server's master (or any of its workers): its command line, configuration
    /// and each worker's memory are read from /proc; no request is sent.
    #[arg(long, value_name = "PID")]
    pub pid: Option<i32>,

    /// With --config: the server it configures, when its name does not say
    /// (apache, nginx, php-fpm, gunicorn, uwsgi).
    #[arg(long, requires = "config")]
    pub adapter: Option<String>,
}

#[derive(Debug, Args)]
pub struct UrlsArgs {
    /// The access log (repeatable, for rotated logs; gzip read as it is).
    #[arg(long = "from-log", value_name = "PATH", required = true)]
    pub from_log: Vec<PathBuf>,

    /// The log's format: combined (default; reads common too), common, vhost_combined, or an
    /// Apache LogFormat or nginx log_format string.
    #[arg(long = "log-format", value_name = "FORMAT")]
    pub log_format: Option<String>,
}

#[derive(Debug, Args)]
pub struct FilesetArgs {
    /// Where to write it: a new or empty directory, or a file set written before (replaced).
    pub dir: PathBuf,

    /// The target operations per second: SPECweb96 scales the directories with it,
    /// (int)(10 * sqrt(ops / 5)), each of 36 files and 4.9 MiB (1 to 50000).
    #[arg(long, default_value_t = 10)]
    pub ops: u32,
}

#[derive(Debug, Args)]
pub struct LaunchArgs {
    /// The target file.
    pub file: PathBuf,

    /// Set a knob (repeatable), e.g. --set workers=4.
    #[arg(long = "set")]
    pub set: Vec<String>,

    /// Stop after this long instead of waiting for Ctrl-C (e.g. 30s).
    #[arg(long = "for")]
    pub run_for: Option<String>,

    /// Where the server runs (and the warm-up's client), as taskset's lists:
    /// server=2-7,client=0-1, or shared. Default: the file's [placement], else apart sets on 4
    /// or more cores (a quarter for the client), shared below.
    #[arg(long = "cpus", value_name = "server=CPUS,client=CPUS")]
    pub cpus: Option<String>,
}

#[derive(Debug, Args)]
pub struct TuneArgs {
    #[command(flatten)]
    pub store: DbArg,

    /// The target file (TOML: [target], [knobs], [load], [budget]; see examples/).
    pub file: PathBuf,

    /// With `config = "PATH"` (your own configuration tree): write the unified diff of your
    /// files for the recommendation here, one per tree (apache2.diff, nginx.diff, php-fpm.diff),
    /// to apply with `patch -p1 -d DIR_OF_YOUR_MAIN_FILE`.
    #[arg(long = "diff", value_name = "DIR")]
    pub diff: Option<PathBuf>,

    /// How to search.
    #[arg(long, value_enum, default_value_t = crate::tune::Strategy::OneAtATime)]
    pub strategy: crate::tune::Strategy,

    /// Objective: the most throughput with p99 at or under this (e.g. 50ms); with --min-rps,
    /// the p99 that rate must be served within.
    #[arg(long = "slo-p99")]
    pub slo_p99: Option<String>,

    /// Objective: the least memory that serves at least this many requests/s (98% of it, as an
    /// open loop at that rate delivers); with --strategy rightsize, the traffic to serve.
    #[arg(long = "min-rps")]
    pub min_rps: Option<f64>,

    /// Measurements of each configuration (more are taken when they spread over 10%); in a
    /// comparison (one-at-a-time, keepalive), the rounds before any verdict.
    #[arg(long, default_value_t = 3)]
    pub repeats: usize,

    /// The smallest change worth adopting (e.g. 2%): a value is adopted when its gain's 99%
    /// interval excludes zero and the gain clears this; "worse" when the interval lies wholly
    /// below zero; "no effect" when it lies within plus or minus this; "undecided" otherwise.
    #[arg(long, default_value = "2%")]
    pub threshold: String,

    /// Rounds at the most in a comparison: more are taken only while a verdict is open.
    #[arg(long = "max-rounds", default_value_t = 10)]
    pub max_rounds: usize,

    /// The longest the tuning may take (e.g. 15m): the plan and its estimate come first; at
    /// this the tuner stops with the best so far. Default: the file's [budget] time, else none.
    #[arg(long = "max-time", alias = "budget", value_name = "DURATION")]
    pub max_time: Option<String>,

    /// The memory the server may use (4GiB, 512MiB, auto). Default: the file's [budget] memory.
    #[arg(long = "memory", value_name = "SIZE")]
    pub memory: Option<String>,

    /// workers: counts within this share of the best throughput are "as good" (the knee).
    #[arg(long = "knee", default_value = "3%")]
    pub knee: String,

    /// workers: recommend at least this share more workers than the knee (spares for bursts;
    /// within the memory budget, short of counts that serve surely less), 0% to 100%, e.g. 25%.
    #[arg(long = "headroom", default_value = "0%")]
    pub headroom: String,

    /// Start from this value of a knob (repeatable), e.g. --set workers=4.
    #[arg(long = "set")]
    pub set: Vec<String>,

    /// Where the server and the client run, as taskset's lists: server=2-7,client=0-1 (a side
    /// not given gets the other CPUs), or shared. Default: the file's [placement], else apart
    /// sets on 4 or more cores (a quarter for the client, at least one), shared below. Every
    /// point records it and the client's share of the machine's CPU.
    #[arg(long = "cpus", value_name = "server=CPUS,client=CPUS")]
    pub cpus: Option<String>,

    /// Every measured point is appended here as it is measured (default: journals/tune-ID.jsonl
    /// beside the history database, ID the run's).
    #[arg(long)]
    pub journal: Option<PathBuf>,

    /// Continue an interrupted run: points already in the journal (--journal, else the newest
    /// journal of this tune beside the history database) are not measured again.
    #[arg(long)]
    pub resume: bool,

    /// Print the outcome as JSON (schema/tune.v1.json) instead of the tables.
    #[arg(long)]
    pub json: bool,

    #[command(flatten)]
    pub output: OutputArgs,

    /// No progress lines on stderr, nor the line saying where the run was stored.
    #[arg(long = "quiet")]
    pub quiet: bool,

    /// Every step's before/after table, its notes and evidence (as `show` prints them), not
    /// a line a step.
    #[arg(long, short = 'v')]
    pub verbose: bool,
}

#[derive(Debug, Args)]
pub struct MergeArgs {
    /// The reports (webtune bench --json output), two or more.
    #[arg(required = true)]
    pub files: Vec<PathBuf>,

    /// Print the merged report as JSON (same schema as bench) instead of text.
    #[arg(long)]
    pub json: bool,

    /// Fail (exit 3) when this holds of the merged run, as bench --fail-if (repeatable).
    #[arg(long = "fail-if", value_name = "EXPR")]
    pub fail_if: Vec<String>,
}

/// Which server: exactly one of --pid, --name, --port.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("server").required(true).args(["pid", "name", "port"])))]
pub struct ServerArgs {
    /// The server's master process: it and its descendants.
    #[arg(long)]
    pub pid: Option<i32>,

    /// Every process with this command name (as ps shows it, e.g. apache2, php-fpm8.2).
    #[arg(long)]
    pub name: Option<String>,

    /// The processes listening on this TCP port, and their descendants.
    #[arg(long)]
    pub port: Option<u16>,
}

#[derive(Debug, Args)]
pub struct SyscallsArgs {
    #[command(flatten)]
    pub server: ServerArgs,

    /// The URL to request while tracing.
    #[arg(long)]
    pub url: String,

    /// How many requests to trace.
    #[arg(short = 'n', long = "requests", default_value_t = 1000)]
    pub requests: u64,

    /// Concurrent connections.
    #[arg(short = 'c', long = "connections", default_value_t = 1)]
    pub connections: u64,

    /// A new connection per request (the connection's own calls then count per request).
    #[arg(long = "no-keepalive")]
    pub no_keepalive: bool,

    /// Print JSON (schema/syscalls.v1.json) instead of a table.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct MemArgs {
    #[command(flatten)]
    pub server: ServerArgs,

    /// The memory the server may use: a size (4GiB, 512MiB) or "auto" (MemAvailable plus
    /// what the server uses now).
    #[arg(long = "memory", alias = "budget", value_name = "SIZE")]
    pub memory: Option<String>,

    /// Sample every interval (e.g. 1s) and print one line per sample.
    #[arg(long)]
    pub watch: Option<String>,

    /// With --watch: stop after this many samples (default: until Ctrl-C).
    #[arg(long)]
    pub count: Option<u64>,

    /// Drive requests at this URL between two samples to measure growth per request.
    #[arg(long)]
    pub url: Option<String>,

    /// With --url: how many requests.
    #[arg(short = 'n', long = "requests", default_value_t = 1000)]
    pub requests: u64,

    /// With --url: concurrent connections (default: one per worker).
    #[arg(short = 'c', long = "connections")]
    pub connections: Option<u64>,

    /// Accept figures that leave out processes this user may not read (another user's):
    /// they are listed as unread. Without it, such a process is an error (exit 1).
    #[arg(long)]
    pub partial: bool,

    /// Print JSON (schema/mem.v2.json, sizes in KiB) instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// A switch given as a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OnOff {
    On,
    Off,
}

#[derive(Debug, Args)]
pub struct LabArgs {
    /// Address to listen on; port 0 picks a free one (printed on the first line).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: String,

    /// The most workers (Apache's MaxRequestWorkers).
    #[arg(long, default_value_t = 4)]
    pub workers: usize,

    /// Workers forked at start (default: --workers).
    #[arg(long)]
    pub start_workers: Option<usize>,

    /// Fewer idle workers than this: spawn 1, 2, 4... per second.
    #[arg(long, default_value_t = 1)]
    pub min_spare: usize,

    /// More idle workers than this: retire one per second (default: --workers).
    #[arg(long)]
    pub max_spare: Option<usize>,

    /// Requests a worker serves before it exits and is replaced (0: never).
    #[arg(long, default_value_t = 0)]
    pub max_requests: u64,

    /// Keep connections open between requests.
    #[arg(long, value_enum, default_value_t = OnOff::On)]
    pub keepalive: OnOff,

    /// How long a kept-alive connection may wait for its next request.
    #[arg(long, default_value = "5s")]
    pub keepalive_timeout: String,

    /// Requests per kept-alive connection (0: unlimited).
    #[arg(long, default_value_t = 100)]
    pub max_keepalive_requests: u64,

    /// Listen backlog (Apache's ListenBacklog).
    #[arg(long, default_value_t = 511)]
    pub backlog: i32,

    /// Data loaded before forking, shared copy-on-write by the workers (e.g. 64MiB; whole
    /// MiB, rounded up).
    #[arg(long, value_name = "SIZE")]
    pub preload: Option<String>,

    /// The old spelling of --preload, in MiB.
    #[arg(long, hide = true, conflicts_with = "preload")]
    pub preload_mb: Option<usize>,

    /// CPU time burnt per request (e.g. 2ms; a bare number is seconds). Query: ?cpu=2ms
    #[arg(long, default_value = "0ms")]
    pub cpu: String,

    /// Sleep per request, as waiting on a database (e.g. 10ms; a bare number is seconds).
    /// Query: ?io=10ms
    #[arg(long, default_value = "0ms")]
    pub io_wait: String,

    /// The preloaded heap dirtied per request (e.g. 64KiB). Query: ?dirty=64 (KiB)
    #[arg(long, value_name = "SIZE")]
    pub dirty: Option<String>,

    /// Allocated and never freed per request (e.g. 16KiB). Query: ?leak=16 (KiB)
    #[arg(long, value_name = "SIZE")]
    pub leak: Option<String>,

    /// Response body size (e.g. 1KiB, 100B). Query: ?body=1024 (bytes)
    #[arg(long, value_name = "SIZE")]
    pub body: Option<String>,

    /// The old spellings, with the unit in the name: --dirty-kb N, --leak-kb N, --body-bytes N.
    #[arg(long, hide = true, conflicts_with = "dirty")]
    pub dirty_kb: Option<u64>,
    #[arg(long, hide = true, conflicts_with = "leak")]
    pub leak_kb: Option<u64>,
    #[arg(long, hide = true, conflicts_with = "body")]
    pub body_bytes: Option<u64>,
}

#[derive(Debug, Args)]
pub struct BenchArgs {
    #[command(flatten)]
    pub store: DbArg,

    /// The URL to request (http:// or https://); with --urls or --scenario, optional: the base
    /// that relative URLs in the file resolve against.
    pub url: Option<String>,

    /// Concurrent connections (virtual clients); in the open loop, the most it may open
    /// (default 10; open loop 1000; with client --stages, the highest stage).
    #[arg(short = 'c', long = "connections")]
    pub connections: Option<u64>,

    /// Stop after this many requests (successful or failed), as ab -n.
    #[arg(short = 'n', long = "requests", conflicts_with = "duration")]
    pub requests: Option<u64>,

    /// Stop after this long (e.g. 30s, 2m, 500ms; a bare number is seconds). Default 10s.
    #[arg(short = 'd', long = "duration")]
    pub duration: Option<String>,

    /// Engine threads, as wrk -t (default: one per core available to this process). Not ab's
    /// -t, a time limit: that is -d.
    #[arg(short = 't', long = "threads")]
    pub threads: Option<u64>,

    /// Keep connections alive between requests (the default; accepted for ab compatibility).
    #[arg(short = 'k', long = "keepalive", conflicts_with = "no_keepalive")]
    pub keepalive: bool,

    /// A new connection for every request, as ab without -k.
    #[arg(long = "no-keepalive")]
    pub no_keepalive: bool,

    /// Collect each response as soon as it arrives (wrk's way). By default, when many
    /// responses arrive per wake-up, the client may pause up to 100 us before collecting them
    /// so each wake-up serves a batch, as long as batched responses wait in it at most 1/16 of
    /// a client's cycle on average; latencies count to the kernel's arrival time.
    #[arg(long = "no-coalesce")]
    pub no_coalesce: bool,

    /// The request method (default GET; POST when a body is given).
    #[arg(short = 'm', long = "method")]
    pub method: Option<String>,

    /// A request header, 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,

    /// Send this file as the request body (POST unless -m says otherwise), as ab -p.
    #[arg(short = 'p', long = "post-file", conflicts_with = "body")]
    pub post_file: Option<PathBuf>,

    /// The body's Content-Type, as ab -T.
    #[arg(short = 'T', long = "content-type")]
    pub content_type: Option<String>,

    /// The request body as text, or @FILE to read it from a file (POST unless -m says otherwise).
    #[arg(long = "body")]
    pub body: Option<String>,

    /// A request not answered completely within this time fails as a timeout.
    #[arg(long = "timeout", default_value = "10s")]
    pub timeout: String,

    /// Connection establishment limit (default: the request timeout).
    #[arg(long = "connect-timeout")]
    pub connect_timeout: Option<String>,

    /// Accept any TLS certificate (self-signed test servers).
    #[arg(long = "insecure")]
    pub insecure: bool,

    /// Speak HTTP/2: over TLS with ALPN "h2" for https URLs, cleartext with prior knowledge
    /// (h2c) for http ones. Closed loop only (no --rate, --stages, --scenario, --cookies,
    /// --throttle, --no-keepalive).
    #[arg(long = "h2")]
    pub h2: bool,

    /// With --h2: concurrent streams per connection, each a client sending its next request
    /// when its last is answered (h2load's -m; default 1; at most what the server allows).
    #[arg(long = "streams", requires = "h2")]
    pub streams: Option<u64>,

    /// Print the report as JSON (schema/bench-report.v2.json) instead of text.
    #[arg(long = "json")]
    pub json: bool,

    #[command(flatten)]
    pub output: OutputArgs,

    /// Write per-second latency histograms to FILE in the HdrHistogram log format. A write
    /// that fails is an error (exit 1); the report is still printed and stored.
    #[arg(long = "hdr-log")]
    pub hdr_log: Option<PathBuf>,

    /// No progress line, nor the line saying where the run was stored.
    #[arg(long = "quiet")]
    pub quiet: bool,

    /// Open loop: start this many requests per second whatever the server's pace; latency
    /// counts from each request's scheduled start, so a stalled server shows (wrk2). With
    /// --access-log, `log` is the log's own mean rate and `log*3` three times it.
    #[arg(long = "rate", conflicts_with = "stages", value_name = "R|log|log*X", allow_hyphen_values = true)]
    pub rate: Option<String>,

    /// Open loop: spacing of the scheduled starts (log: the access log's own gaps, scaled to
    /// the rate).
    #[arg(long = "arrival", value_enum)]
    pub arrival: Option<crate::engine::Arrival>,

    /// Replay a server's access log (repeatable, for rotated logs; gzip read as it is): its GET
    /// and HEAD requests answered 2xx or 3xx, in proportion to their counts, to the URL's server.
    #[arg(long = "access-log", value_name = "PATH", conflicts_with_all = ["urls", "scenario"])]
    pub access_log: Vec<PathBuf>,

    /// The access log's format: combined (default; reads common too), common, vhost_combined,
    /// or an Apache LogFormat or nginx log_format string ('$remote_addr [$time_local] "$request" $status').
    #[arg(long = "log-format", value_name = "FORMAT", requires = "access_log")]
    pub log_format: Option<String>,

    /// Ramps, e.g. 10s:100,30s:1000,10s:0: each stage goes linearly from the previous value
    /// (0 at first) to its own over its time. The values are clients (closed loop) or, with
    /// --open or --arrival, requests per second. The run lasts the sum of the stages.
    #[arg(long = "stages", conflicts_with_all = ["duration", "requests"])]
    pub stages: Option<String>,

    /// With --stages: the stages ramp the request rate (open loop), not the clients.
    #[arg(long = "open")]
    pub open: bool,

    /// A file of URLs, one per line ("URL" or "METHOD URL"); blank lines and # comments skipped.
    #[arg(long = "urls", conflicts_with = "scenario")]
    pub urls: Option<PathBuf>,

    /// With --urls: take them in turn or at random.
    #[arg(long = "order", value_enum, requires = "urls")]
    pub order: Option<crate::bench::UrlOrder>,

    /// Each client keeps its own cookie jar, so a session-based app sees one session per client.
    #[arg(long = "cookies")]
    pub cookies: bool,

    /// A TOML file of steps each virtual user takes in turn, with think times (closed loop).
    #[arg(long = "scenario", conflicts_with_all = ["rate", "open", "arrival"])]
    pub scenario: Option<PathBuf>,

    /// Cap each client's bandwidth, both ways (e.g. 33.6kbps, 1Mbps, 100KB/s), as http_load.
    /// Bandwidths are decimal, as networks count (1MB/s is 10^6 bytes/s; 1MiB/s is 2^20);
    /// sizes of memory are binary (MB is MiB).
    #[arg(long = "throttle")]
    pub throttle: Option<String>,

    /// With --throttle: throttle only this share of the clients (e.g. 20%).
    #[arg(long = "slow-share", requires = "throttle")]
    pub slow_share: Option<String>,

    /// Seed for random URL order and Poisson arrivals (default: from the clock; reported).
    #[arg(long = "seed")]
    pub seed: Option<u64>,

    /// Send a share of the load from this host too, ssh://[user@]host[:port] (repeatable):
    /// the same bench runs there through ssh (BatchMode; $WEBTUNE_SSH replaces `ssh`) with the
    /// host's own webtune, of this version, found on its PATH. -c, -n and --rate are split
    /// between the machines; the reports merge exactly, with one line per machine.
    #[arg(long = "remote", value_name = "ssh://[user@]host[:port]")]
    pub remote: Vec<String>,

    /// With --remote: send no load from this machine.
    #[arg(long = "remote-only", requires = "remote")]
    pub remote_only: bool,

    /// Run as a remote host's share: ready line, start on "go", stop on "stop" or when
    /// standard input closes (the SSH session ended).
    #[arg(long = "agent", hide = true)]
    pub agent: bool,
    /// The CPUs the client (the engine's threads) runs on, as taskset: client=0-1. The default
    /// thread count follows the set. Default: every CPU this process may use. The report says
    /// where the server was found (a server on this machine: its processes' CPUs) and what
    /// share of the machine the client took.
    #[arg(long = "cpus", value_name = "client=CPUS")]
    pub cpus: Option<String>,

    /// Fail the run (exit 3) when this holds, e.g. 'p99 > 50ms', 'errors > 0.1%',
    /// 'rps < 1000' (repeatable). Metrics: rps; errors (failed requests) and non2xx (responses
    /// not 2xx), each a count or a share with %; a latency
    /// (min mean stdev p50 p75 p90 p99 p99.9 max) of the total time, or of the first byte or
    /// connect with ttfb. or connect. in front (ttfb.p99). Operators < <= > >=.
    #[arg(long = "fail-if", value_name = "EXPR")]
    pub fail_if: Vec<String>,
}
