//! Entry points as users write them: a Django project from `django-admin startproject`, no
//! file of it touched, served by gunicorn and by uwsgi from its module path
//! (`mysite.wsgi:application` with `chdir`), with the servers' own configuration files as the
//! base configuration, and webtune's port, foreground and run directory kept over them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use webtune::server::{self, Running, TargetFile};

use crate::support::{bench_json, find_program, missing, webtune_with_limit};

const UWSGI_PYTHON: &str = "/usr/lib/uwsgi/plugins/python3_plugin.so";

/// Whether the servers and Django are here; under CI they must be.
fn have(server: &str) -> bool {
    if find_program(server).is_none() {
        missing(server);
        return false;
    }
    if server == "uwsgi" && !Path::new(UWSGI_PYTHON).exists() {
        missing("uwsgi's python3 plugin (uwsgi-plugin-python3)");
        return false;
    }
    if !Path::new("/usr/lib/python3/dist-packages/django").exists() {
        missing("Django (Debian package python3-django)");
        return false;
    }
    true
}

/// `django-admin startproject mysite` in a new temporary directory: DEBUG on and no
/// ALLOWED_HOSTS, which Django reads as localhost and 127.0.0.1, and `/` answers 200.
fn django_project() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    // Debian's python3, the one gunicorn and uwsgi's plugin run (PATH may hold another).
    let mut cmd = match find_program("django-admin") {
        Some(admin) => std::process::Command::new(admin),
        None => {
            let mut c = std::process::Command::new("/usr/bin/python3");
            c.args(["-m", "django"]);
            c
        }
    };
    let out = cmd.args(["startproject", "mysite"]).current_dir(dir.path()).output().expect("run django-admin");
    assert!(out.status.success(), "startproject: {}", String::from_utf8_lossy(&out.stderr));
    let project = dir.path().join("mysite");
    assert!(project.join("mysite/wsgi.py").is_file());
    (dir, project)
}

/// A target file in `dir` (relative paths in it resolve there).
fn write_target(dir: &Path, text: &str) -> PathBuf {
    let f = dir.join("target.toml");
    std::fs::write(&f, text).unwrap();
    f
}

/// Processes whose command line names `needle` (a test's own temporary directory).
fn processes_naming(needle: &str) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if e.file_name().to_string_lossy().parse::<u32>().is_err() {
            continue;
        }
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(needle) {
            out.push(format!("{}: {cmdline}", e.file_name().to_string_lossy()));
        }
    }
    out
}

/// The worker count once it reaches `n` (or after 10 s): with the count in the server's own
/// file, launch does not know how many to wait for.
fn workers(r: &Running, n: usize) -> usize {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while r.worker_pids().len() < n && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    r.worker_pids().len()
}

/// Every address the server's processes listen on.
fn listening(r: &Running) -> Vec<std::net::SocketAddr> {
    let mut pids = vec![r.master_pid()];
    pids.extend(r.worker_pids());
    webtune::procmem::net::listening_addresses(&pids)
}

/// A short tune of the project (1 then 2 workers), checked: every window's requests answered
/// 200, the recommendation names the module path, nothing left running.
fn tune_django(adapter: &str, native_workers: &str) {
    let (dir, project) = django_project();
    let f = write_target(
        dir.path(),
        &format!(
            "[target]\nadapter = \"{adapter}\"\napp = \"mysite.wsgi:application\"\nchdir = \"mysite\"\n\
             [knobs]\nworkers = [1, 2]\n[load]\nconnections = 4\nduration = \"1s\"\n"
        ),
    );
    let journal = dir.path().join("journal.jsonl");
    let run = crate::support::quick_tune(&f, &["--journal", journal.to_str().unwrap()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: Value = serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout));
    let points = v["points"].as_array().unwrap();
    assert!(!points.is_empty(), "{v:#}");
    for p in points {
        assert!(!p["status"].to_string().contains("failed"), "a point failed: {p:#}");
        for s in p["samples"].as_array().unwrap() {
            assert!(s["succeeded"].as_u64().unwrap() > 0 && s["rps"].as_f64().unwrap() > 0.0, "{s:#}");
            assert_eq!(s["failed"], 0, "{s:#}");
        }
    }
    let config = v["config"].as_str().unwrap();
    assert!(config.starts_with(&format!("{adapter} ")), "{config}");
    assert!(config.contains("--chdir mysite") && config.contains(native_workers), "{config}");
    let module = if adapter == "uwsgi" { "--module mysite.wsgi:application" } else { " mysite.wsgi:application" };
    assert!(config.contains(module), "{config}");
    assert!(!config.contains("app:app"), "{config}");
    let left = processes_naming(&project.display().to_string());
    assert!(left.is_empty(), "left running: {left:?}");
    // The project is as startproject left it.
    let files: Vec<String> = walk(&project);
    assert_eq!(
        files,
        ["manage.py", "mysite/__init__.py", "mysite/asgi.py", "mysite/settings.py", "mysite/urls.py", "mysite/wsgi.py"],
        "{files:?}"
    );
}

/// The project's files (not Python's byte-code caches), relative, sorted.
fn walk(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                if e.file_name() != "__pycache__" {
                    dirs.push(p);
                }
            } else {
                out.push(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn django_tunes_under_gunicorn_from_its_module_path() {
    if !have("gunicorn") {
        return;
    }
    tune_django("gunicorn", "--workers");
}

#[test]
fn django_tunes_under_uwsgi_from_its_module_path() {
    if !have("uwsgi") {
        return;
    }
    tune_django("uwsgi", "--processes");
}

/// gunicorn.conf.py is the base configuration and a knob overrides it; its bind, daemon, pid
/// file and logs do not take the server off loopback, out of the foreground or out of the
/// run directory.
#[test]
fn a_gunicorn_conf_py_is_the_base_and_webtune_owns_port_foreground_and_files() {
    if !have("gunicorn") {
        return;
    }
    let (dir, project) = django_project();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let o = outside.display();
    std::fs::write(
        dir.path().join("gunicorn.conf.py"),
        format!(
            "workers = 3\nbind = \"0.0.0.0:9\"\ndaemon = True\npidfile = \"{o}/gunicorn.pid\"\n\
             accesslog = \"{o}/access.log\"\nerrorlog = \"{o}/error.log\"\n\
             logconfig_dict = {{'version': 1, 'root': {{'level': 'INFO', 'handlers': ['f']}}, 'loggers': {{'gunicorn.error': {{'level': 'INFO', 'handlers': ['f']}}}}, \
             'handlers': {{'f': {{'class': 'logging.FileHandler', 'filename': '{o}/dict.log'}}}}}}\n"
        ),
    )
    .unwrap();
    let f = write_target(
        dir.path(),
        "[target]\nadapter = \"gunicorn\"\napp = \"mysite.wsgi:application\"\nchdir = \"mysite\"\n\
         config = \"gunicorn.conf.py\"\n",
    );
    let file = TargetFile::load(&f).unwrap_or_else(|e| panic!("{}", e.0));
    // The file's own workers, then webtune's knob over them.
    for (overrides, workers) in [(vec![], 3), (vec![("workers".to_string(), "2".to_string())], 2)] {
        let r = server::launch(&file, &overrides).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(self::workers(&r, workers), workers, "{:?}\n{}", r.worker_pids(), r.config_text());
        let addresses = listening(&r);
        assert_eq!(addresses, [format!("127.0.0.1:{}", r.port).parse().unwrap()], "{}", r.config_text());
        let (v, run) = bench_json(&["-c", "2", "-n", "40", &format!("{}/", r.base_url())]);
        assert_eq!(v["result"]["status"]["200"], 40, "{}: {:#}", run.stderr, v["result"]);
        // The access log is kept, in the run directory.
        let access = std::fs::read_to_string(r.dir().join("access.log")).unwrap_or_default();
        assert!(access.contains("\"GET / HTTP/1.1\" 200"), "{access}");
        let dir_of_run = r.dir().to_path_buf();
        drop(r);
        assert!(!dir_of_run.exists());
    }
    let written: Vec<_> = std::fs::read_dir(&outside).unwrap().flatten().map(|e| e.file_name()).collect();
    assert!(written.is_empty(), "written outside the run directory: {written:?}");
    assert!(processes_naming(&project.display().to_string()).is_empty());
    let text = file.recommend(&[("workers".into(), "4".into())]);
    assert_eq!(text, "gunicorn --config gunicorn.conf.py --chdir mysite --workers 4 mysite.wsgi:application");
}

/// app.ini is read first and webtune's options win; an ini that would listen elsewhere is
/// refused at its line before anything starts (exit 2).
#[test]
fn a_uwsgi_ini_is_the_base_and_one_that_listens_elsewhere_is_refused() {
    if !have("uwsgi") {
        return;
    }
    let (dir, project) = django_project();
    let outside = dir.path().join("outside");
    std::fs::create_dir(&outside).unwrap();
    let ini = |extra: &str| {
        format!(
            "[uwsgi]\nplugins = python3\nmaster = true\nprocesses = 3\nchdir = {}\nmodule = mysite.wsgi:application\n\
             pidfile = {}/uwsgi.pid\nstats = 127.0.0.1:9191\n{extra}",
            project.display(),
            outside.display()
        )
    };
    std::fs::write(dir.path().join("app.ini"), ini("")).unwrap();
    // The ini names the app: no `app` in the target file.
    let f = write_target(dir.path(), "[target]\nadapter = \"uwsgi\"\nconfig = \"app.ini\"\n");
    let file = TargetFile::load(&f).unwrap_or_else(|e| panic!("{}", e.0));
    for (overrides, workers) in [(vec![], 3), (vec![("workers".to_string(), "2".to_string())], 2)] {
        let r = server::launch(&file, &overrides).unwrap_or_else(|e| panic!("{e:#}"));
        assert_eq!(self::workers(&r, workers), workers, "{}", r.config_text());
        assert_eq!(listening(&r), [format!("127.0.0.1:{}", r.port).parse().unwrap()], "{}", r.config_text());
        let (v, run) = bench_json(&["-c", "2", "-n", "40", &format!("{}/", r.base_url())]);
        assert_eq!(v["result"]["status"]["200"], 40, "{}: {:#}", run.stderr, v["result"]);
        // The stats socket is webtune's, in the run directory.
        assert_eq!(r.counters().expect("uwsgi stats")["alive"], workers, "{}", r.config_text());
        drop(r);
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0, "the ini's pid file was written");
    assert!(processes_naming(&project.display().to_string()).is_empty());
    let text = file.recommend(&[("workers".into(), "4".into())]);
    assert_eq!(text, "uwsgi --ini app.ini --processes 4");

    std::fs::write(dir.path().join("app.ini"), ini("http = 0.0.0.0:8000\n")).unwrap();
    let run = webtune_with_limit(&["launch", f.to_str().unwrap(), "--for", "1s"], Duration::from_secs(30));
    assert_eq!(run.code, 2, "{}", run.stderr);
    let at = format!(
        "{}:3: config \"app.ini\": {}:9: http = 0.0.0.0:8000:",
        f.display(),
        dir.path().join("app.ini").display()
    );
    assert!(run.stderr.contains(&at) && run.stderr.contains("listen there as well"), "{}", run.stderr);
}

/// A module that does not import: the server's own words; a chdir that is not there: the
/// target file's line, exit 2.
#[test]
fn a_module_that_does_not_import_and_a_missing_chdir() {
    if !have("gunicorn") || !have("uwsgi") {
        return;
    }
    let (dir, _project) = django_project();
    for adapter in ["gunicorn", "uwsgi"] {
        let f = write_target(
            dir.path(),
            &format!("[target]\nadapter = \"{adapter}\"\napp = \"mysite.nosuch:application\"\nchdir = \"mysite\"\n"),
        );
        let file = TargetFile::load(&f).unwrap_or_else(|e| panic!("{}", e.0));
        let started = std::time::Instant::now();
        let e = format!("{:#}", server::launch(&file, &[]).err().expect("the import fails"));
        assert!(e.contains("No module named 'mysite.nosuch'"), "{adapter}: {e}");
        assert!(started.elapsed() < Duration::from_secs(20), "{adapter}: not at once: {e}");

        let f = write_target(
            dir.path(),
            &format!("[target]\nadapter = \"{adapter}\"\napp = \"mysite.wsgi:application\"\nchdir = \"nosuch\"\n"),
        );
        let run = webtune_with_limit(&["launch", f.to_str().unwrap(), "--for", "1s"], Duration::from_secs(30));
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(run.stderr.contains(&format!("{}:4: chdir \"nosuch\":", f.display())), "{}", run.stderr);
    }
}

/// Starman takes any .psgi file, and the recommendation names it.
#[test]
fn starman_serves_any_psgi_path() {
    if find_program("starman").is_none() {
        missing("starman");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let app = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/apps/psgi/app.psgi");
    std::fs::create_dir(dir.path().join("site")).unwrap();
    std::fs::copy(&app, dir.path().join("site/hello.psgi")).unwrap();
    let f = write_target(dir.path(), "[target]\nadapter = \"starman\"\napp = \"site/hello.psgi\"\n");
    let file = TargetFile::load(&f).unwrap_or_else(|e| panic!("{}", e.0));
    let r = server::launch(&file, &[("workers".into(), "2".into())]).unwrap_or_else(|e| panic!("{e:#}"));
    let (v, _) = bench_json(&["-c", "2", "-n", "20", &format!("{}/", r.base_url())]);
    assert_eq!(v["result"]["status"]["200"], 20, "{:#}", v["result"]);
    drop(r);
    assert_eq!(file.recommend(&[("workers".into(), "4".into())]), "starman --workers 4 site/hello.psgi");
}

/// A pythonpath directory with a comma in its name (gunicorn splits --pythonpath at commas):
/// the app imports from it, and the recommendation passes it whole.
#[test]
fn a_pythonpath_with_a_comma_in_it_is_imported_whole() {
    if find_program("gunicorn").is_none() {
        missing("gunicorn");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join("lib,v2");
    std::fs::create_dir(&lib).unwrap();
    std::fs::write(
        lib.join("hello.py"),
        "def app(environ, start_response):\n    start_response('200 OK', [('Content-Type', 'text/plain')])\n    return [b'from lib,v2']\n",
    )
    .unwrap();
    let f = write_target(
        dir.path(),
        "[target]\nadapter = \"gunicorn\"\napp = \"hello:app\"\npythonpath = [\"lib,v2\"]\n[knobs]\nworkers = [1]\n",
    );
    let file = TargetFile::load(&f).unwrap_or_else(|e| panic!("{}", e.0));
    let mut running = server::launch(&file, &[]).unwrap_or_else(|e| panic!("{e:#}"));
    let (v, run) = bench_json(&["-n", "5", "-c", "1", &running.base_url()]);
    running.stop();
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(v["result"]["succeeded"], 5, "{v:#}");
    let rec = file.recommend(&[("workers".into(), "2".into())]);
    assert_eq!(rec, "PYTHONPATH='lib,v2' gunicorn --workers 2 hello:app");
}
