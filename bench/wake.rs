//! What one sleep costs: the CPU a thread is charged for blocking in epoll_wait and being
//! woken from another core, the part of a load generator's CPU per request that depends on
//! how often it runs out of responses to read rather than on the work per request.
//!
//!     cargo build --release --example wake
//!     taskset -c 0 target/release/examples/wake WAKER_CPU GAP_US [WAKES]
//!
//! A waker thread pinned to WAKER_CPU writes an eventfd every GAP_US microseconds (spinning on
//! the clock, so its own sleeps do not blur the gap); the main thread, on the CPU it was given,
//! waits for it in epoll_wait and reads it, WAKES times (default 20000). Prints
//! `wakes N`, `sleeps N` (voluntary context switches: the waits that did block) and
//! `cpu_us_per_wake X` (the main thread's user + system CPU from RUSAGE_THREAD / N). Idle gaps
//! of a kept-alive HTTP client at -c 50 against one nginx core are about 5-20 us.

use std::process::ExitCode;
use std::time::{Duration, Instant};

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wake: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (cpu, gap, wakes) = match args.as_slice() {
        [cpu, gap] => (cpu, gap, "20000"),
        [cpu, gap, wakes] => (cpu, gap, wakes.as_str()),
        _ => return Err("usage: wake WAKER_CPU GAP_US [WAKES]".into()),
    };
    let cpu: usize = cpu.parse().map_err(|_| format!("bad CPU {cpu:?}"))?;
    let gap = Duration::from_micros(gap.parse().map_err(|_| format!("bad gap {gap:?}"))?);
    let wakes: u64 = wakes.parse().ok().filter(|&n| n > 0).ok_or(format!("bad count {wakes:?}"))?;

    // SAFETY: plain eventfd/epoll calls on descriptors this function owns.
    let (efd, ep) = unsafe { (libc::eventfd(0, libc::EFD_NONBLOCK | libc::EFD_CLOEXEC), libc::epoll_create1(0)) };
    if efd < 0 || ep < 0 {
        return Err("eventfd or epoll_create1 failed".into());
    }
    let mut ev = libc::epoll_event { events: libc::EPOLLIN as u32, u64: 0 };
    // SAFETY: ev is a valid event for a valid descriptor.
    if unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, efd, &mut ev) } != 0 {
        return Err("epoll_ctl failed".into());
    }

    let waker = std::thread::spawn(move || -> Result<(), String> {
        pin(cpu)?;
        for _ in 0..wakes {
            let due = Instant::now() + gap;
            while Instant::now() < due {
                std::hint::spin_loop();
            }
            let one: u64 = 1;
            // SAFETY: writes 8 bytes from a live u64 to the eventfd.
            unsafe { libc::write(efd, (&raw const one).cast(), 8) };
        }
        Ok(())
    });

    let before = thread_usage();
    let (mut seen, mut woken) = (0u64, 0u64);
    let mut events = [libc::epoll_event { events: 0, u64: 0 }; 4];
    while seen < wakes {
        // SAFETY: events has room for the 4 events asked for.
        let n = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), 4, 1000) };
        if n == 0 && waker.is_finished() {
            break;
        }
        let mut count: u64 = 0;
        // SAFETY: reads 8 bytes into a live u64.
        if n > 0 && unsafe { libc::read(efd, (&raw mut count).cast(), 8) } == 8 {
            seen += count;
            woken += 1;
        }
    }
    let after = thread_usage();
    waker.join().map_err(|_| "the waker thread panicked".to_string())??;
    if woken == 0 {
        return Err("never woken".into());
    }
    let cpu_us = (after.0 - before.0).as_secs_f64() * 1e6;
    println!("wakes {woken}");
    println!("sleeps {}", after.1 - before.1);
    println!("cpu_us_per_wake {:.2}", cpu_us / woken as f64);
    Ok(())
}

fn pin(cpu: usize) -> Result<(), String> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(format!("no CPU {cpu}"));
    }
    // SAFETY: a zeroed cpu_set_t with one valid bit set, for this thread (pid 0).
    let ok = unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), &set) == 0
    };
    if ok { Ok(()) } else { Err(format!("cannot pin the waker to CPU {cpu}: {}", std::io::Error::last_os_error())) }
}

/// This thread's user + system CPU and its voluntary context switches.
fn thread_usage() -> (Duration, i64) {
    // SAFETY: getrusage fills the zeroed struct it is given.
    let ru = unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_THREAD, &mut ru);
        ru
    };
    let tv = |t: libc::timeval| Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64);
    (tv(ru.ru_utime) + tv(ru.ru_stime), ru.ru_nvcsw)
}
