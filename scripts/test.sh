#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine (as root) and runs gputrace's whole
# test suite: formatting, lints, unit tests and the integration tests that
# trace real MPI programs with mpirun and read the archives back with
# otf2-print and the Python otf2 module. GPU tests live in tests/gpu/ and
# run on a GPU machine (see docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
source scripts/env.sh
# The real CUPTI libraries setup.sh fetched, for cupti-sys's real_libraries test.
CUPTI_SYS_TEST_LIBS=$(cat "${XDG_CACHE_HOME:-$HOME/.cache}/gputrace-tests/cupti/test-libs")
export CUPTI_SYS_TEST_LIBS
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo build --workspace --release
cargo test --workspace --release
