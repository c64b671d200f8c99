//! Integration tests: the real binary against real servers on loopback.

mod support;

mod about;
mod access_log;
mod architecture;
mod asp;
mod backends;
mod baseline;
mod baseline_trees;
mod bench_errors;
mod bench_h2;
mod bench_hardening;
mod bench_nginx;
mod bench_pacing;
mod bench_rogue;
mod bench_workload;
mod containers;
mod entry_points;
mod fileset;
mod hostile_control;
mod hostile_state;
mod init;
mod lab;
mod launch;
mod listeners;
mod mem_syscalls;
mod outputs;
mod package;
mod remote;
mod store;
mod targets;
mod thresholds;
mod user_trees;
mod user_trees_fpm;
