#!/usr/bin/env bash
# GPU tests, device side: builds the CUDA test programs with nvcc, runs
# them under gputrace (and a few without, for the ground truth), and packs
# the archives, CUPTI captures and logs into $OUT for
# tests/gpu/check_archives.py, which checks them with the independent
# Python OTF2 reader (the GPU machine has no OTF2).
#
# Usage (on the GPU machine, from the repository root, with gputrace's
# release binaries in $GT_BIN, default .device/bin):
#   tests/gpu/run.sh [basic] [subset] [peer] [mpi] [torch] [nsys] [nocupti] [halo] [nvtx] [graphs] [memory] [uvm]
# With no argument it runs them all. Each part prints "PART <name> rc=<n>".
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${GT_BIN:-$root/.device/bin}
gt=$bin/gputrace
out=${OUT:-/tmp/gputrace-gpu-out}
work=/tmp/gputrace-gpu
rm -rf "$work"
mkdir -p "$work" "$out"
export PATH=/usr/local/cuda/bin:$PATH
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 NCCL_NVLS_ENABLE=0
parts=${*:-basic subset peer mpi torch nsys nocupti halo nvtx graphs memory uvm}
progs=$root/tests/gpu/programs
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
echo "GPUs: $ngpu; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

build() { # name sources... -> $work/name
  local name=$1; shift
  nvcc -O2 -arch=native -o "$work/$name" "$@" >"$work/$name.build.log" 2>&1 || { cat "$work/$name.build.log"; return 1; }
}

part() { # name command...: runs, logs to $work/<name>.log, prints the rc
  local name=$1; shift
  "$@" >"$work/$name.out" 2>"$work/$name.err"
  local rc=$?
  echo "PART $name rc=$rc"
  tail -n 25 "$work/$name.err" | sed "s/^/  [$name] /"
  return 0
}

for p in $parts; do
  case $p in
    basic)
      build cuda_basic "$progs/cuda_basic.cu" || continue
      "$work/cuda_basic" 20 >"$work/basic.plain.out"
      part basic env GPUTRACE_CUDA_CAPTURE="$work/capture-basic" "$gt" -o "$work/exp-basic" "$work/cuda_basic" 20
      cmp -s "$work/basic.plain.out" "$work/basic.out" && echo "  basic: stdout identical to the untraced run"
      ;;
    subset)
      [ -x "$work/cuda_basic" ] || build cuda_basic "$progs/cuda_basic.cu" || continue
      part subset env GPUTRACE_CUDA_ENABLE=driver,kernel,memcpy "$gt" -o "$work/exp-subset" "$work/cuda_basic" 5
      ;;
    peer)
      if [ "$ngpu" -lt 2 ]; then echo "PART peer skipped (1 GPU)"; continue; fi
      build cuda_peer "$progs/cuda_peer.cu" || continue
      part peer env GPUTRACE_CUDA_CAPTURE="$work/capture-peer" "$gt" -o "$work/exp-peer" "$work/cuda_peer" 32
      ;;
    mpi)
      nvcc -O2 -arch=native -o "$work/mpi_cuda" "$progs/mpi_cuda.cu" $(mpicc --showme:compile) $(mpicc --showme:link) \
        >"$work/mpi_cuda.build.log" 2>&1 || { cat "$work/mpi_cuda.build.log"; continue; }
      part mpi "$gt" -o "$work/exp-mpi" mpirun -np 2 --bind-to none "$work/mpi_cuda" 10
      ;;
    torch)
      part torch "$gt" -o "$work/exp-torch" torchrun --standalone --nproc-per-node 2 "$progs/torch_two.py"
      ;;
    nsys)
      nsys=$(command -v nsys || find /opt/nvidia /usr/local/cuda* -name nsys -type f -perm -u+x 2>/dev/null | grep -v host- | head -1)
      [ -x "$work/cuda_basic" ] || build cuda_basic "$progs/cuda_basic.cu" || continue
      if [ -z "$nsys" ]; then echo "PART nsys skipped (no nsys)"; continue; fi
      part nsys "$gt" -o "$work/exp-nsys" "$nsys" profile -t cuda -o "$work/nsys-report" "$work/cuda_basic" 5
      ;;
    halo)
      # Every GPU a rank: MPI halo exchange plus peer copies to the right
      # neighbour's GPU; traced and untraced runs interleaved for the cost.
      if [ "$ngpu" -lt 2 ]; then echo "PART halo skipped (1 GPU)"; continue; fi
      nvcc -O2 -arch=native -x cu -DWITH_CUDA -o "$work/halo" "$progs/halo.cpp" $(mpicxx --showme:compile) \
        $(mpicxx --showme:link) >"$work/halo.build.log" 2>&1 || { cat "$work/halo.build.log"; continue; }
      steps=${HALO_STEPS:-200}
      for r in 1 2 3; do
        t0=$(date +%s.%N)
        mpirun -np "$ngpu" --bind-to none "$work/halo" "$steps" >"$work/halo.plain.$r.out" 2>&1
        t1=$(date +%s.%N)
        python3 -c "print(f'{$t1 - $t0:.2f}')" >"$work/halo.plain.$r.time"
        rm -rf "$work/exp-halo"
        t0=$(date +%s.%N)
        "$gt" -o "$work/exp-halo" mpirun -np "$ngpu" --bind-to none "$work/halo" "$steps" >"$work/halo.out" 2>"$work/halo.err"
        t1=$(date +%s.%N)
        python3 -c "print(f'{$t1 - $t0:.2f}')" >"$work/halo.traced.$r.time"
      done
      echo "PART halo: $ngpu ranks, $steps steps"
      for r in 1 2 3; do
        echo "  round $r: untraced $(sed -n 's/^halo: .*, \(.*\) s$/\1/p' "$work/halo.plain.$r.out") s in the loop," \
          "$(cat "$work/halo.plain.$r.time") s whole; traced whole $(cat "$work/halo.traced.$r.time") s"
      done
      echo "  traced loop: $(sed -n 's/^halo: .*, \(.*\) s$/\1/p' "$work/halo.out") s"
      grep "gputrace\]" "$work/halo.err" | tail -8 | sed 's/^/  [halo] /'
      ;;
    nvtx)
      # Kernels launched inside nested NVTX ranges (C++, the toolkit's
      # nvtx3 headers), then PyTorch's torch.cuda.nvtx and emit_nvtx.
      build nvtx_cuda "$progs/nvtx_cuda.cu" -ldl || continue
      part nvtx "$gt" -o "$work/exp-nvtx" "$work/nvtx_cuda" 6 3 4 5
      if python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null; then
        part torch_nvtx "$gt" -o "$work/exp-torch_nvtx" python3 "$progs/torch_nvtx.py" 5
      else
        echo "PART torch_nvtx skipped (no PyTorch with CUDA)"
      fi
      ;;
    graphs)
      # CUDA graphs (stream capture and the explicit API, launched N times):
      # node by node (the default), then one region per graph execution
      # (GPUTRACE_CUDA_ENABLE with `graph`); CUPTI buffers captured for the
      # CI fixtures.
      build cuda_graphs "$progs/cuda_graphs.cu" || continue
      n=${GRAPH_LAUNCHES:-25}
      part graphs env GPUTRACE_CUDA_CAPTURE="$work/capture-graphs" "$gt" -o "$work/exp-graphs" "$work/cuda_graphs" "$n"
      part graphs_whole env GPUTRACE_CUDA_ENABLE=default,graph GPUTRACE_CUDA_CAPTURE="$work/capture-graphs_whole" \
        "$gt" -o "$work/exp-graphs_whole" "$work/cuda_graphs" "$n"
      "$gt" stats --report cuda_graph_sum "$work/exp-graphs" >"$work/graphs.stats.out" 2>&1
      "$gt" stats --report cuda_graph_sum "$work/exp-graphs_whole" >"$work/graphs_whole.stats.out" 2>&1
      sed 's/^/  [graphs stats] /' "$work/graphs.stats.out" "$work/graphs_whole.stats.out"
      ;;
    memory)
      # Allocations and frees of every kind, leaks of known sizes, pools
      # (GPUTRACE_CUDA_ENABLE=default,memory); captured for fixtures.
      build cuda_memory "$progs/cuda_memory.cu" -lcuda || continue
      "$work/cuda_memory" 3 >"$work/memory.plain.out"
      part memory env GPUTRACE_CUDA_ENABLE=default,memory GPUTRACE_CUDA_CAPTURE="$work/capture-memory" \
        "$gt" -o "$work/exp-memory" "$work/cuda_memory" 3
      cmp -s "$work/memory.plain.out" "$work/memory.out" && echo "  memory: stdout identical to the untraced run"
      "$gt" stats --report cuda_mem_sum --report cuda_mem_leaks "$work/exp-memory" 2>&1 | sed 's/^/  [memory] /'
      ;;
    uvm)
      # Managed memory touched host, device, host, with the uvm member on.
      build cuda_managed "$progs/cuda_managed.cu" || continue
      part uvm env GPUTRACE_CUDA_CAPTURE="$work/capture-uvm" GPUTRACE_CUDA_ENABLE=default,memory,uvm \
        "$gt" -o "$work/exp-uvm" "$work/cuda_managed" 64
      "$gt" stats --report cuda_uvm_sum --report cuda_mem_sum "$work/exp-uvm" 2>&1 | sed 's/^/  [uvm] /'
      ;;
    nocupti)
      [ -x "$work/cuda_basic" ] || build cuda_basic "$progs/cuda_basic.cu" || continue
      part nocupti env GPUTRACE_CUPTI_LIB=/nonexistent/libcupti.so "$gt" -o "$work/exp-nocupti" "$work/cuda_basic" 5
      ;;
  esac
done

cd "$work"
tar czf "$out/gpu-results.tgz" --exclude='*.build.log' exp-* capture-* *.out *.err 2>/dev/null
ls -la "$out"
