//! Integration tests: the real binary against real servers on loopback.

mod support;

mod bench_errors;
mod bench_nginx;
mod bench_rogue;
mod lab;
mod mem_syscalls;
