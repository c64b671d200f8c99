//! Seed 000 on the real Apache + mod_perl + Apache::ASP: the user's StateDir and Global win
//! over the adapter's defaults (in the written configuration and in what the app does), and
//! app_config moves the app's directives between a .htaccess, read on every request, and the
//! server's configuration, read once (in the files and in an strace of the requests).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use webtune::server::{self, Running, TargetFile};

use crate::support::apache::chmod_tree;
use crate::support::{bench_json, find_program, missing, webtune};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

fn app() -> PathBuf {
    examples().join("apps/asp-bookmarks")
}

/// Apache, mod_perl and Apache::ASP are here; under CI they must be.
fn have_asp() -> bool {
    let ok = find_program("apache2").is_some()
        && Path::new("/usr/lib/apache2/modules/mod_perl.so").exists()
        && Path::new("/usr/share/perl5/Apache/ASP.pm").exists();
    if !ok {
        missing("apache2 with mod_perl and Apache::ASP (apache2, libapache2-mod-perl2, libapache-asp-perl)");
    }
    ok
}

/// The bookmarks app under the apache adapter with `config` lines added to [target.config].
fn target(config: &str) -> TargetFile {
    let text = format!(
        "[target]\nadapter = \"apache\"\napp = \"apps/asp-bookmarks\"\nready = \"/index.asp\"\nready_timeout = \"30s\"\n\
         [target.config]\nworkers = 2\n{config}"
    );
    TargetFile::parse(&text, &examples().join("test.toml")).unwrap_or_else(|e| panic!("{}", e.0))
}

fn parse_error(config: &str) -> String {
    let text = format!("[target]\nadapter = \"apache\"\napp = \"apps/asp-bookmarks\"\n[target.config]\n{config}");
    TargetFile::parse(&text, &examples().join("test.toml")).expect_err("refused").0
}

fn page(r: &Running) -> String {
    let (code, body) = server::http::get("127.0.0.1", r.port, "/index.asp", Duration::from_secs(10)).expect("answer");
    assert_eq!(code, 200, "{body}");
    body
}

/// "sessions started: N" from the page (the page's own request starts one more).
fn sessions_started(body: &str) -> u64 {
    let tail = body.split("sessions started: ").nth(1).unwrap_or_else(|| panic!("no count in {body}"));
    tail[..tail.find(';').unwrap()].parse().unwrap()
}

/// The lines of the run's httpd.conf that start with `prefix` (after indentation).
fn lines_with<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.lines().map(str::trim).filter(|l| l.starts_with(prefix)).collect()
}

#[test]
fn a_users_state_dir_and_global_win_over_the_adapters() {
    if !have_asp() {
        return;
    }
    // The user's own StateDir (absolute: used as named) and a Global with another global.asa.
    let state = tempfile::tempdir().unwrap();
    let global = tempfile::tempdir().unwrap();
    let asa = std::fs::read_to_string(app().join("global.asa")).unwrap();
    let asa = asa.replace("sub Bookmarks_Title { 'MyBookmarks' }", "sub Bookmarks_Title { 'the test Global' }");
    std::fs::write(global.path().join("global.asa"), asa).unwrap();
    chmod_tree(state.path());
    chmod_tree(global.path());
    let (s, g) = (state.path().display().to_string(), global.path().display().to_string());
    let file = target(&format!("\"PerlSetVar StateDir\" = \"{s}\"\n\"PerlSetVar Global\" = \"{g}\"\n"));
    let r = server::launch(&file, &[]).unwrap_or_else(|e| panic!("{e:#}"));
    let conf = r.config_text();
    assert_eq!(lines_with(conf, "PerlSetVar StateDir"), [format!("PerlSetVar StateDir {s}")], "{conf}");
    assert_eq!(lines_with(conf, "PerlSetVar Global"), [format!("PerlSetVar Global {g}")], "{conf}");

    // The app runs the user's global.asa and keeps its state in the user's StateDir.
    let first = page(&r);
    assert!(first.contains("<title>the test Global</title>"), "{first}");
    // With cookies each client keeps one session: three clients start three sessions.
    let (v, run) = bench_json(&["-c", "3", "-n", "30", "--cookies", &format!("{}/index.asp", r.base_url())]);
    assert_eq!(v["result"]["status"]["200"], 30, "{}", run.stderr);
    let after = page(&r);
    assert_eq!(sessions_started(&after), sessions_started(&first) + 3 + 1, "{first}\n{after}");
    // $Application in server/, sessions in the hexadecimal group directories.
    let names = |dir: &Path| -> Vec<String> {
        std::fs::read_dir(dir).map_or(vec![], |d| d.map(|e| e.unwrap().file_name().to_string_lossy().into()).collect())
    };
    let application = names(&state.path().join("server"));
    assert!(application.iter().any(|n| n.starts_with("application")), "{s}/server: {application:?}");
    let sessions: usize = names(state.path())
        .iter()
        .filter(|n| n.len() == 2 && n.chars().all(|c| c.is_ascii_hexdigit()))
        .map(|g| names(&state.path().join(g)).len())
        .sum();
    assert!(sessions > 0, "no session files in {s}: {:?}", names(state.path()));
    assert!(!r.dir().join("asp-state").exists(), "the adapter's default StateDir was made anyway");
    drop(r);

    // A relative StateDir is made inside the run directory; `..` cannot leave it.
    let file = target("\"PerlSetVar StateDir\" = \"my-state\"\n");
    let r = server::launch(&file, &[]).unwrap_or_else(|e| panic!("{e:#}"));
    let inside = r.dir().join("my-state");
    assert_eq!(
        lines_with(r.config_text(), "PerlSetVar StateDir"),
        [format!("PerlSetVar StateDir {}", inside.display())]
    );
    page(&r);
    let application = names(&inside.join("server"));
    assert!(application.iter().any(|n| n.starts_with("application")), "{}: {application:?}", inside.display());
}

#[test]
fn a_state_dir_that_leaves_the_run_directory_or_a_bad_app_config_is_bad_input() {
    for bad in ["../escape", "a/../../b", ""] {
        let e = parse_error(&format!("\"PerlSetVar StateDir\" = \"{bad}\"\n"));
        assert!(e.contains("a relative one inside the run directory (no .., not empty)"), "{bad}: {e}");
    }
    let e = parse_error("app_config = \"sometimes\"\n");
    assert!(e.contains("app_config = \"sometimes\": expected \"htaccess\" or \"server\""), "{e}");
    // The same rules for --set, before anything starts: one line, exit 2.
    let file = examples().join("asp-bookmarks.toml");
    for (command, set) in [("launch", "PerlSetVar StateDir=../x"), ("tune", "app_config=sometimes")] {
        let run = webtune(&[command, file.to_str().unwrap(), "--set", set]);
        assert_eq!(run.code, 2, "{command} --set {set}: {}", run.stderr);
        assert_eq!(run.stderr.lines().count(), 1, "{}", run.stderr);
        assert!(run.stderr.starts_with("webtune: --set "), "{}", run.stderr);
    }
}

/// `webtune syscalls` on the running server: `n` requests of /index.asp, one connection each.
fn trace(r: &Running, n: &str) -> Value {
    let url = format!("{}/index.asp", r.base_url());
    let run = webtune(&["syscalls", "--pid", &r.master_pid().to_string(), "--url", &url, "-n", n, "--json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap()
}

#[test]
fn app_config_moves_the_apps_directives_between_htaccess_and_the_server() {
    if !have_asp() {
        return;
    }
    if find_program("strace").is_none() {
        missing("strace");
        return;
    }
    let file = target("\"PerlSetVar Debug\" = \"0\"\n\"PerlSetVar SessionSerialize\" = \"1\"\n");

    // htaccess: the app's directives in the linked document root's .htaccess, AllowOverride All.
    let r = server::launch(&file, &[("app_config".into(), "htaccess".into())]).unwrap_or_else(|e| panic!("{e:#}"));
    let conf = r.config_text();
    assert!(lines_with(conf, "PerlSetVar").is_empty(), "{conf}");
    assert!(conf.contains(&format!("<Directory {}/htdocs>\n  AllowOverride All\n", r.dir().display())), "{conf}");
    let htaccess = std::fs::read_to_string(r.dir().join("htdocs/.htaccess")).unwrap();
    for line in ["PerlResponseHandler Apache::ASP", "PerlSetVar Debug 0", "PerlSetVar SessionSerialize 1"] {
        assert!(htaccess.contains(line), "{line} not in\n{htaccess}");
    }
    assert!(page(&r).contains("<title>MyBookmarks</title>"));
    let v = trace(&r, "40");
    let reads = v["htaccess_reads_per_request"].as_f64().unwrap();
    assert!((reads - 1.0).abs() < 0.1, "one .htaccess read per request, not {reads}: {v:#}");
    assert!(
        v["flags"].as_array().unwrap().iter().any(|f| f.as_str().unwrap().contains(".htaccess files read")),
        "{v:#}"
    );
    drop(r);
    // The user's app directory was never written to.
    assert!(!app().join("htdocs/.htaccess").exists());

    // server: the same lines inside the document root's <Directory>, AllowOverride None.
    let r = server::launch(&file, &[("app_config".into(), "server".into())]).unwrap_or_else(|e| panic!("{e:#}"));
    let conf = r.config_text();
    assert!(!r.dir().join("htdocs/.htaccess").exists());
    let block = conf.split(&format!("<Directory {}/htdocs>\n", r.dir().display())).nth(1).unwrap();
    let block = &block[..block.find("</Directory>").unwrap()];
    assert!(block.starts_with("  AllowOverride None\n"), "{block}");
    for line in ["PerlResponseHandler Apache::ASP", "PerlSetVar Debug 0", "PerlSetVar SessionSerialize 1"] {
        assert!(block.contains(line), "{line} not in\n{block}");
    }
    assert!(page(&r).contains("<title>MyBookmarks</title>"));
    let v = trace(&r, "40");
    assert_eq!(v["htaccess_reads_per_request"], 0.0, "{v:#}");
    assert!(
        !v["missing_files"].as_array().unwrap().iter().any(|m| m["path"].as_str().unwrap().ends_with("/.htaccess")),
        "{v:#}"
    );
    drop(r);
}
