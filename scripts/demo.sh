#!/usr/bin/env bash
# Sets up a fresh Debian/Ubuntu machine (as root), builds gputrace, and
# traces the bundled MPI example end to end with 4 ranks: one OTF2 archive
# and a summary. Where a GPU and CUDA's nvcc are present, the bundled CUDA
# example is traced too.
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

if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  if [ -x "$nvcc" ]; then
    "$nvcc" -O2 -o build/cuda_saxpy examples/cuda_saxpy.cu
    rm -rf build/demo-cuda
    ./target/release/gputrace -o build/demo-cuda ./build/cuda_saxpy 50
    echo "The CUDA archive: build/demo-cuda/traces.otf2"
  else
    echo "(a GPU is present but nvcc is not: the CUDA example is skipped)"
  fi
fi
