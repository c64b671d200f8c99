#!/usr/bin/env bash
# The seeds' check of the memory arithmetic, with its figures printed: for the lab (128 MiB
# preload, 4 workers) and Apache prefork + mod_perl (96 MiB preloaded, 4 workers), the PSS sum
# and the RSS sum against what the system gets back when the server stops. Three steady
# trials each; the test fails when the PSS sum's median error exceeds 10%.
# Run it on an idle machine: system-wide free memory moves with everything else.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo test --release --test memory_truth -- --nocapture --test-threads 1 2>&1 | grep -E "freed|void|^test |test result"
