#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine (as root), builds gputrace, and
# traces the bundled MPI example end to end with 4 ranks: one OTF2 archive
# and a summary. (With a GPU and CUDA present, the CUDA example follows
# once the CUDA agent exists.)
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
source scripts/env.sh
cargo build --release --workspace
mkdir -p build
mpicc.openmpi -O2 -o build/mpi_ring examples/mpi_ring.c
rm -rf build/demo-mpi
./target/release/gputrace -o build/demo-mpi mpirun.openmpi -np 4 ./build/mpi_ring 1000
echo
echo "The archive: build/demo-mpi/traces.otf2 (open it in Vampir, or look at it with otf2-print):"
otf2-print build/demo-mpi/traces.otf2 | sed -n '1,12p'
