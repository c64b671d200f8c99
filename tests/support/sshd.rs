//! Real OpenSSH servers as load-generating "hosts": each an `sshd -D` on its own free port of
//! 127.0.0.1, with a throwaway host key and an authorised key made in a temp directory, and the
//! test's own webtune (or a fake one) first on the sessions' PATH. `WEBTUNE_SSH` points ssh at
//! the directory's ssh_config and known_hosts.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The keys, the client's configuration and the `bin` directories the hosts share.
pub struct SshLab {
    pub dir: tempfile::TempDir,
    sshd: PathBuf,
    pub hosts: Vec<Sshd>,
}

/// One sshd; stopped on drop.
pub struct Sshd {
    pub port: u16,
    child: Child,
}

/// What a host's sessions find first on their PATH, and whether it lets the client in.
#[derive(Clone, Copy)]
pub enum HostKind {
    /// The test's own webtune.
    Real,
    /// A `webtune` script that says it is this version built from another commit.
    WrongVersion,
    /// A host that refuses the client's key.
    RefusesKey,
    /// The test's own webtune, and a `date` 5 s ahead.
    SkewedClock,
}

impl SshLab {
    /// Keys and configuration; None (a skip) when OpenSSH is not installed outside CI.
    pub fn new() -> Option<SshLab> {
        let (Some(sshd), Some(keygen)) = (super::find_program("sshd"), super::find_program("ssh-keygen")) else {
            super::missing("OpenSSH (sshd, ssh-keygen)");
            return None;
        };
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for key in ["host_key", "id"] {
            let ok = Command::new(&keygen)
                .args(["-q", "-t", "ed25519", "-N", "", "-f"])
                .arg(d.join(key))
                .stdin(Stdio::null())
                .status()
                .unwrap()
                .success();
            assert!(ok, "ssh-keygen failed");
        }
        std::fs::copy(d.join("id.pub"), d.join("authorized_keys")).unwrap();
        std::fs::write(d.join("no_keys"), "").unwrap();
        let real = d.join("bin");
        std::fs::create_dir(&real).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_webtune"), real.join("webtune")).unwrap();
        let fake = d.join("fake-bin");
        std::fs::create_dir(&fake).unwrap();
        let other_build = format!("webtune {} (000000000000)", env!("CARGO_PKG_VERSION"));
        std::fs::write(fake.join("webtune"), format!("#!/bin/sh\necho '{other_build}'\n")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(fake.join("webtune"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let skewed = d.join("skewed-bin");
        std::fs::create_dir(&skewed).unwrap();
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_webtune"), skewed.join("webtune")).unwrap();
        std::fs::write(skewed.join("date"), "#!/bin/sh\necho \"$(( $(/bin/date +%s) + 5 )).$(/bin/date +%N)\"\n")
            .unwrap();
        std::fs::set_permissions(skewed.join("date"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let user = nix::unistd::User::from_uid(nix::unistd::geteuid()).unwrap().unwrap().name;
        std::fs::write(
            d.join("ssh_config"),
            format!(
                "Host *\n  User {user}\n  IdentityFile {id}\n  IdentitiesOnly yes\n  UserKnownHostsFile {kh}\n  \
                 StrictHostKeyChecking yes\n  LogLevel ERROR\n",
                id = d.join("id").display(),
                kh = d.join("known_hosts").display()
            ),
        )
        .unwrap();
        // sshd's privilege separation needs this directory (a service would have made it).
        let _ = std::fs::create_dir_all("/run/sshd");
        Some(SshLab { dir, sshd, hosts: Vec::new() })
    }

    /// Starts a host; returns its `ssh://` address.
    pub fn host(&mut self, kind: HostKind) -> String {
        let d = self.dir.path().to_path_buf();
        let (bin, keys) = match kind {
            HostKind::Real => ("bin", "authorized_keys"),
            HostKind::WrongVersion => ("fake-bin", "authorized_keys"),
            HostKind::RefusesKey => ("bin", "no_keys"),
            HostKind::SkewedClock => ("skewed-bin", "authorized_keys"),
        };
        let host_pub = std::fs::read_to_string(d.join("host_key.pub")).unwrap();
        for _attempt in 0..5 {
            let port = super::nginx::free_port();
            let config = d.join(format!("sshd_{port}.conf"));
            std::fs::write(
                &config,
                format!(
                    "Port {port}\nListenAddress 127.0.0.1\nHostKey {hk}\nAuthorizedKeysFile {keys}\nPidFile {pid}\n\
                     UsePAM no\nStrictModes no\nPermitRootLogin yes\nPasswordAuthentication no\n\
                     KbdInteractiveAuthentication no\nPubkeyAuthentication yes\nLogLevel ERROR\n\
                     SetEnv PATH={bin}:/usr/local/bin:/usr/bin:/bin\n",
                    hk = d.join("host_key").display(),
                    keys = d.join(keys).display(),
                    pid = d.join(format!("sshd_{port}.pid")).display(),
                    bin = d.join(bin).display(),
                ),
            )
            .unwrap();
            use std::os::unix::process::CommandExt;
            let mut child = Command::new(&self.sshd)
                .args(["-D", "-e", "-f"])
                .arg(&config)
                .process_group(0)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(std::fs::File::create(d.join(format!("sshd_{port}.log"))).unwrap())
                .spawn()
                .expect("start sshd");
            if super::wait_listening(&mut child, port, Duration::from_secs(10)) {
                let mut kh = std::fs::OpenOptions::new().create(true).append(true).open(d.join("known_hosts")).unwrap();
                use std::io::Write;
                writeln!(kh, "[127.0.0.1]:{port} {}", host_pub.trim()).unwrap();
                self.hosts.push(Sshd { port, child });
                return format!("ssh://127.0.0.1:{port}");
            }
            let log = std::fs::read_to_string(d.join(format!("sshd_{port}.log"))).unwrap_or_default();
            eprintln!("sshd did not start on port {port}: {log}");
        }
        panic!("sshd did not start after 5 attempts");
    }

    /// The `WEBTUNE_SSH` value that uses this lab's keys and known hosts.
    pub fn ssh_command(&self) -> String {
        format!("ssh -F {}", self.config().display())
    }

    fn config(&self) -> PathBuf {
        self.dir.path().join("ssh_config")
    }

    /// `webtune ARGS` with `WEBTUNE_SSH` set, not yet waited for.
    pub fn webtune(&self, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_webtune"));
        c.args(args)
            .env("WEBTUNE_DB", super::test_db())
            .env("WEBTUNE_SSH", self.ssh_command())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        c
    }

    /// `webtune ARGS` with `WEBTUNE_SSH` set, run to its end (at most `limit`).
    pub fn run(&self, args: &[&str], limit: Duration) -> super::Run {
        let child = self.webtune(args).spawn().expect("start webtune");
        super::finish(child, limit, args)
    }
}

impl Sshd {
    /// The host is lost: sshd and the sshd processes serving its sessions are killed at once
    /// (each session is its own process group, so they are found by parentage), which closes
    /// the sessions' connections and pipes as a crash of the host would.
    pub fn kill_all(&mut self) {
        // Again until none is left: a session forked while we collect would survive one pass.
        for _ in 0..20 {
            let mut doomed = vec![self.child.id() as i32];
            let mut i = 0;
            while i < doomed.len() {
                doomed.extend(children(doomed[i]).into_iter().filter(|&pid| comm(pid).starts_with("sshd")));
                i += 1;
            }
            let alive: Vec<i32> = doomed.into_iter().filter(|&pid| !comm(pid).is_empty()).collect();
            if alive.is_empty() {
                break;
            }
            for pid in alive {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::Signal::SIGKILL);
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = self.child.wait();
    }
}

fn comm(pid: i32) -> String {
    std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default()
}

/// The processes whose parent is `pid`.
fn children(pid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|p| {
            let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
            // The parent is the second field after the command, which may hold spaces.
            stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<i32>().ok()) == Some(pid)
        })
        .collect()
}

impl Drop for Sshd {
    fn drop(&mut self) {
        super::stop_child(&mut self.child, Duration::from_secs(5));
    }
}

/// Pids of the webtune agents (remote shares) whose command line mentions `marker`: the
/// agents themselves, not the local ssh clients or remote shells whose command lines carry
/// the same words (counting those, a test could act before a host's session existed, and
/// an sshd forked after its listener was killed would survive as an orphan).
pub fn agents(marker: &str) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir("/proc") else { return Vec::new() };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| comm(*pid).trim_end() == "webtune")
        .filter(|pid| {
            let cmd = std::fs::read(Path::new("/proc").join(pid.to_string()).join("cmdline")).unwrap_or_default();
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            cmd.contains("--agent") && cmd.contains(marker) && cmd.contains("bench")
        })
        .collect()
}
