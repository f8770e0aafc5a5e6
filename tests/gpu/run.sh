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
#                    [lost] [threads] [nccl4] [ddp4] [torchsampled] [hang4] [critical] [straggler4] [link] [sampled] [paths]
# With no argument it runs them all (threads, nccl4, ddp4, torchsampled,
# hang4 and straggler4 and link need 2 or more GPUs, made for 4). Each part prints
# "PART <name> rc=<n>".
# The four-GPU parts compare with an independent CUPTI counter
# (programs/cupti_count.c, its files in count-<name>/) and NCCL's own log
# of every call (NCCL_DEBUG_SUBSYS=COLL, in ncclcoll-<name>/).
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
parts=${*:-basic subset peer mpi torch nsys nocupti halo nvtx graphs memory uvm lost threads nccl4 ddp4 torchsampled hang4 critical straggler4 link sampled paths}
progs=$root/tests/gpu/programs
ngpu=$(nvidia-smi -L 2>/dev/null | wc -l)
echo "GPUs: $ngpu; $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | head -1)"

build() { # name sources... -> $work/name
  local name=$1; shift
  nvcc -O2 -arch=native -o "$work/$name" "$@" >"$work/$name.build.log" 2>&1 || { cat "$work/$name.build.log"; return 1; }
}

counter() { # builds the independent CUPTI counter once: $work/libcupti_count.so
  [ -f "$work/libcupti_count.so" ] && return 0
  local cuda=/usr/local/cuda
  gcc -O2 -shared -fPIC -o "$work/libcupti_count.so" "$progs/cupti_count.c" -I$cuda/include -I$cuda/extras/CUPTI/include \
    -L$cuda/lib64 -L$cuda/extras/CUPTI/lib64 -lcupti -Wl,-rpath,$cuda/lib64:$cuda/extras/CUPTI/lib64 \
    >"$work/cupti_count.build.log" 2>&1 || { cat "$work/cupti_count.build.log"; return 1; }
}

repeat() { # name runs command...: runs it `runs` times (with $work/rep removed before each: the
  # experiment directory of a traced command), prints how many failed, keeps the first failure's stderr
  local name=$1 runs=$2 failed=0 i; shift 2
  rm -f "$work/$name.setup"
  for i in $(seq "$runs"); do
    rm -rf "$work/rep"
    "$@" >"$work/$name.rep.out" 2>"$work/$name.rep.err"
    local rc=$?
    grep -h 'setup after a common start' "$work/$name.rep.out" >>"$work/$name.setup" 2>/dev/null
    if [ $rc -ne 0 ]; then
      failed=$((failed + 1))
      [ -f "$work/$name.fail.err" ] || cp "$work/$name.rep.err" "$work/$name.fail.err"
    fi
  done
  echo "  $name: $failed of $runs runs failed"
  echo "$runs $failed" >"$work/$name.result"
  # threads_peer: the spread of its threads' setup times (slowest - fastest), min / median / max over the runs.
  [ -s "$work/$name.setup" ] && sed -n 's/.*fastest \([0-9.]*\) ms, slowest \([0-9.]*\) ms/\1 \2/p' "$work/$name.setup" |
    awk '{print $2 - $1}' | sort -g | awk '{v[NR]=$1} END {if (NR) printf "  %s: setup spread between threads, ms: min %.3f median %.3f max %.3f (%d runs)\n", n, v[1], v[int((NR+1)/2)], v[NR], NR}' n="$name"
  [ -f "$work/$name.fail.err" ] && grep -v '^\[gputrace\] *$' "$work/$name.fail.err" | head -5 | sed "s/^/  [$name first failure] /"
  return 0
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
    sampled)
      # The mpi part's program with call stacks sampled and every MPI
      # call's path (check_sampled.py).
      [ -x "$work/mpi_cuda" ] || nvcc -O2 -arch=native -o "$work/mpi_cuda" "$progs/mpi_cuda.cu" $(mpicc --showme:compile) \
        $(mpicc --showme:link) >"$work/mpi_cuda.build.log" 2>&1 || { cat "$work/mpi_cuda.build.log"; continue; }
      part sampled "$gt" --sampling 1ms --unwinding -o "$work/exp-sampled" mpirun -np 2 --bind-to none "$work/mpi_cuda" 10
      ;;
    paths)
      # NCCL calls' call paths (--unwinding): nccl_four.cu's all-reduces
      # and broadcasts, a rank per GPU (check_sampled.py).
      if [ "$ngpu" -lt 2 ]; then echo "PART paths skipped (1 GPU)"; continue; fi
      [ -x "$work/nccl_four_mpi" ] || nvcc -O2 -arch=native -DWITH_MPI -o "$work/nccl_four_mpi" "$progs/nccl_four.cu" \
        -lnccl $(mpicc --showme:compile) $(mpicc --showme:link) >"$work/nccl_four.build.log" 2>&1 ||
        { cat "$work/nccl_four.build.log"; continue; }
      part paths "$gt" --unwinding -o "$work/exp-paths" mpirun -np "$ngpu" --bind-to none -x NCCL_NVLS_ENABLE \
        "$work/nccl_four_mpi" collectives 20
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
    lost)
      # Records CUPTI drops are counted: CUPTI gets no buffer for every
      # second request (the test hook _GPUTRACE_TEST_CUPTI_REFUSE) and
      # drops what it could not write; small buffers alone drop nothing.
      [ -x "$work/cuda_basic" ] || build cuda_basic "$progs/cuda_basic.cu" || continue
      part small env GPUTRACE_CUDA_BUFFER=64k "$gt" -o "$work/exp-small" "$work/cuda_basic" 2000
      # The lost run's buffers are captured (with CUPTI's drop counts) for
      # the CI test of the accounting (tests/fixtures/cupti/cuda_basic_lost).
      part lost env _GPUTRACE_TEST_CUPTI_REFUSE=2 GPUTRACE_CUDA_BUFFER=64k GPUTRACE_CUDA_CAPTURE="$work/capture-lost" \
        "$gt" -o "$work/exp-lost" "$work/cuda_basic" 2000
      grep -h 'lost:' "$work/small.err" "$work/lost.err" | sed 's/^/  [lost] /'
      ;;
    threads)
      # One host thread per GPU, halo rows pushed into the neighbours' GPUs
      # with cudaMemcpyAsync: untraced, traced (the program checks its
      # result), and once under the counter and once kept for the checker.
      if [ "$ngpu" -lt 2 ]; then echo "PART threads skipped (1 GPU)"; continue; fi
      build threads_peer "$progs/threads_peer.cu" -std=c++17 -ldl || continue
      counter || continue
      runs=${THREAD_RUNS:-20}
      repeat threads.plain "$runs" "$work/threads_peer" 100
      repeat threads.traced "$runs" "$gt" -o "$work/rep" "$work/threads_peer" 100
      repeat threads.traced.x4 "$runs" "$gt" -o "$work/rep" "$work/threads_peer" 100 64 256 $((ngpu * 4))
      repeat threads.traced.runtime "$runs" env GPUTRACE_CUDA_ENABLE=runtime "$gt" -o "$work/rep" "$work/threads_peer" 100
      mkdir -p "$work/count-threads"
      CUDA_INJECTION64_PATH=$work/libcupti_count.so CUPTI_COUNT_DIR=$work/count-threads "$work/threads_peer" 100 \
        >"$work/threads.count.out" 2>&1 || echo "  threads: the counted run failed"
      part threads "$gt" -o "$work/exp-threads" "$work/threads_peer" 100
      grep -h '^threads_peer' "$work/threads.out" | sed 's/^/  [threads] /'
      ;;
    nccl4)
      # NCCL on every GPU: one rank per GPU (MPI) in each mode of
      # nccl_four.cu, then one process driving every GPU; each under the
      # counter and under gputrace with NCCL's log of every call.
      if [ "$ngpu" -lt 2 ]; then echo "PART nccl4 skipped (1 GPU)"; continue; fi
      counter || continue
      nvcc -O2 -arch=native -o "$work/nccl_four" "$progs/nccl_four.cu" -lnccl >"$work/nccl_four.build.log" 2>&1 &&
        nvcc -O2 -arch=native -DWITH_MPI -o "$work/nccl_four_mpi" "$progs/nccl_four.cu" -lnccl \
          $(mpicc --showme:compile) $(mpicc --showme:link) >>"$work/nccl_four.build.log" 2>&1 ||
        { cat "$work/nccl_four.build.log"; continue; }
      k=${NCCL4_ITERS:-50}
      for mode in ${NCCL4_MODES:-groups halo zero alltoall graph collectives single}; do
        name=nccl4-$mode
        mkdir -p "$work/count-$name" "$work/ncclcoll-$name"
        counted=(env CUDA_INJECTION64_PATH="$work/libcupti_count.so" CUPTI_COUNT_DIR="$work/count-$name")
        traced=(NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL NCCL_DEBUG_FILE="$work/ncclcoll-$name/%h.%p"
          GPUTRACE_NCCL_CAPTURE="$work/ncclcap-$name-%p.ncclcap")
        [ "$mode" = groups ] && traced+=(GPUTRACE_CUDA_CAPTURE="$work/capture-$name")
        if [ "$mode" = single ]; then
          prog=("$work/nccl_four" collectives "$k")
          "${counted[@]}" "${prog[@]}" >"$work/$name.count.out" 2>&1 || echo "  $name: the counted run failed"
          part "$name" env "${traced[@]}" "$gt" --keep-raw -o "$work/exp-$name" "${prog[@]}"
        else
          prog=("$work/nccl_four_mpi" "$mode" "$k")
          mpi=(mpirun -np "$ngpu" --bind-to none -x NCCL_NVLS_ENABLE)
          "${counted[@]}" "${mpi[@]}" -x CUDA_INJECTION64_PATH -x CUPTI_COUNT_DIR "${prog[@]}" \
            >"$work/$name.count.out" 2>&1 || echo "  $name: the counted run failed"
          xs=()
          for a in "${traced[@]}"; do xs+=(-x "$a"); done
          part "$name" "$gt" --keep-raw -o "$work/exp-$name" "${mpi[@]}" "${xs[@]}" "${prog[@]}"
        fi
        grep -h '^nccl_four' "$work/$name.out" | sed "s/^/  [$name] /"
        grep -h 'repaired\|dropped\|lost' "$work/$name.err" | head -3 | sed "s/^/  [$name] /"
      done
      ;;
    ddp4)
      # PyTorch DDP with a rank per GPU: under the counter, then traced
      # with NCCL's log of every call.
      if [ "$ngpu" -lt 2 ] || ! python3 -c 'import torch' 2>/dev/null; then echo "PART ddp4 skipped"; continue; fi
      counter || continue
      mkdir -p "$work/count-ddp4" "$work/ncclcoll-ddp4"
      CUDA_INJECTION64_PATH=$work/libcupti_count.so CUPTI_COUNT_DIR=$work/count-ddp4 STEPS=10 \
        torchrun --standalone --nproc-per-node "$ngpu" "$progs/torch_ddp.py" >"$work/ddp4.count.out" 2>&1 ||
        echo "  ddp4: the counted run failed"
      part ddp4 env STEPS=10 NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL NCCL_DEBUG_FILE="$work/ncclcoll-ddp4/%h.%p" \
        GPUTRACE_NCCL_CAPTURE="$work/ncclcap-ddp4-%p.ncclcap" \
        "$gt" --keep-raw -o "$work/exp-ddp4" torchrun --standalone --nproc-per-node "$ngpu" "$progs/torch_ddp.py"
      grep -h 'repaired\|dropped\|lost' "$work/ddp4.err" | head -3 | sed "s/^/  [ddp4] /"
      ;;
    torchsampled)
      # The ddp4 part's program with call stacks sampled: torchrun passes
      # the sampler to its workers, and it stays dormant in torchrun
      # itself (check_torchsampled.py).
      if [ "$ngpu" -lt 2 ] || ! python3 -c 'import torch' 2>/dev/null; then echo "PART torchsampled skipped"; continue; fi
      part torchsampled env STEPS=10 "$gt" --sampling 1ms --unwinding -o "$work/exp-torchsampled" \
        torchrun --standalone --nproc-per-node "$ngpu" "$progs/torch_ddp.py"
      ;;
    critical)
      # The critical path across GPU work: a delayed kernel, a host gap
      # before a launch, and the baseline without either; analyze's JSON of
      # each in its experiment (analyze.json) for check_critical.py.
      build critical_gpu "$progs/critical_gpu.cu" || continue
      for mode in kernel gap none; do
        part "critical-$mode" "$gt" -o "$work/exp-critical-$mode" "$work/critical_gpu" "$mode" 60 20 500
        "$gt" analyze --format json "$work/exp-critical-$mode" >"$work/exp-critical-$mode/analyze.json" \
          2>"$work/critical-$mode.analyze.err" || echo "  critical-$mode: analyze failed"
      done
      ;;
    straggler4)
      # A GPU straggler: one rank per GPU, rank 2 (1 on 2 GPUs) spins 20 ms
      # in a kernel before each ncclAllReduce, its host calls on time;
      # `gputrace analyze` must name it with the kernel (check_straggler.py).
      # `driver`: NCCL launches with cuLaunchKernelEx, joined by correlation id.
      if [ "$ngpu" -lt 2 ]; then echo "PART straggler4 skipped (1 GPU)"; continue; fi
      nvcc -O2 -arch=native -o "$work/straggler_gpu" "$progs/straggler_gpu.cu" -lnccl $(mpicc --showme:compile) \
        $(mpicc --showme:link) >"$work/straggler_gpu.build.log" 2>&1 || { cat "$work/straggler_gpu.build.log"; continue; }
      slow=2; [ "$ngpu" -lt 3 ] && slow=1
      part straggler4 env GPUTRACE_CUDA_ENABLE=default,driver "$gt" -o "$work/exp-straggler4" \
        mpirun -np "$ngpu" --bind-to none -x NCCL_NVLS_ENABLE -x GPUTRACE_CUDA_ENABLE \
        "$work/straggler_gpu" "${STRAGGLER_ITERS:-20}" 20 "$slow"
      "$gt" analyze --format json "$work/exp-straggler4" >"$work/straggler4.analyze.out" 2>"$work/straggler4.analyze.err"
      echo "  straggler4: analyze rc=$?"
      grep -h '^straggler_gpu\|^expect' "$work/straggler4.out" | sed 's/^/  [straggler4] /'
      grep -h 'Straggler:' "$work/straggler4.err" | sed 's/^/  [straggler4] /'
      ;;
    link)
      # A slower link: one rank per GPU, each copies 256 MiB to the next
      # GPU per iteration (NVTX "iteration"), peer to peer, but rank 1
      # stages it through pinned host memory; `gputrace analyze` must name
      # rank 1 as the NCCL straggler with its copies as a slower link, per
      # iteration too (check_link.py).
      if [ "$ngpu" -lt 2 ]; then echo "PART link skipped (1 GPU)"; continue; fi
      nvcc -O2 -arch=native -o "$work/link_gpu" "$progs/link_gpu.cu" -lnccl $(mpicc --showme:compile) \
        $(mpicc --showme:link) >"$work/link_gpu.build.log" 2>&1 || { cat "$work/link_gpu.build.log"; continue; }
      part link env GPUTRACE_CUDA_ENABLE=default,driver "$gt" -o "$work/exp-link" \
        mpirun -np "$ngpu" --bind-to none -x NCCL_NVLS_ENABLE -x GPUTRACE_CUDA_ENABLE \
        "$work/link_gpu" "${LINK_ITERS:-20}" 256 1
      "$gt" analyze --format json --iterations iteration "$work/exp-link" >"$work/link.analyze.out" \
        2>"$work/link.analyze.err"
      echo "  link: analyze rc=$?"
      grep -h '^expect' "$work/link.out" | sed 's/^/  [link] /'
      grep -h 'Straggler:' "$work/link.err" | sed 's/^/  [link] /'
      ;;
    hang4)
      # Jobs that hang on their GPUs (hang_gpu.cu, a rank per GPU), each
      # stopped by the watchdog: NCCL all-reduces the last rank never
      # joins, then a kernel spinning forever on GPU 1. Times from the
      # start, and from the hang (the latest "hanging at" a rank printed)
      # to the archive and to gputrace's end, in hang4-<mode>.time.out;
      # the analysis as JSON in hang4-<mode>.analysis.out (check_hang.py).
      if [ "$ngpu" -lt 2 ]; then echo "PART hang4 skipped (1 GPU)"; continue; fi
      nvcc -O2 -arch=native -o "$work/hang_gpu" "$progs/hang_gpu.cu" -lnccl $(mpicc --showme:compile) \
        $(mpicc --showme:link) >"$work/hang_gpu.build.log" 2>&1 || { cat "$work/hang_gpu.build.log"; continue; }
      hang_timeout=10
      for mode in nccl spin; do
        name=hang4-$mode
        t0=$(date +%s.%N)
        # `timeout`: the part ends even if the watchdog does not fire.
        part "$name" timeout 180 "$gt" --hang-timeout "$hang_timeout" -o "$work/exp-$name" \
          mpirun -np "$ngpu" --bind-to none -x NCCL_NVLS_ENABLE "$work/hang_gpu" "$mode" 20
        t1=$(date +%s.%N)
        "$gt" analyze --format json -o "$work/$name.analysis.out" "$work/exp-$name" 2>"$work/$name.analysis.err" ||
          echo "  $name: gputrace analyze failed: $(head -3 "$work/$name.analysis.err")"
        python3 - "$work/$name.out" "$work/exp-$name/traces.otf2" "$t0" "$t1" "$hang_timeout" \
          >"$work/$name.time.out" <<'PY'
import os, re, sys
out, archive, t0, t1, limit = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), sys.argv[5]
hung = [float(m.group(1)) for m in re.finditer(r"^hang_gpu rank \d+: hanging at ([0-9.]+)$", open(out).read(), re.M)]
print(f"expect timeout_s {limit}")
print(f"expect wall_s {t1 - t0:.2f}")
if hung:
    print(f"expect start_to_hang_s {max(hung) - t0:.2f}")
    print(f"expect hang_to_exit_s {t1 - max(hung):.2f}")
    if os.path.exists(archive):
        print(f"expect hang_to_archive_s {os.path.getmtime(archive) - max(hung):.2f}")
PY
        sed "s/^expect /  [$name] /" "$work/$name.time.out"
        grep -h 'hang:' "$work/$name.err" | head -2 | sed "s/^/  [$name] /"
      done
      ;;
    nocupti)
      [ -x "$work/cuda_basic" ] || build cuda_basic "$progs/cuda_basic.cu" || continue
      part nocupti env GPUTRACE_CUPTI_LIB=/nonexistent/libcupti.so "$gt" -o "$work/exp-nocupti" "$work/cuda_basic" 5
      ;;
  esac
done

cd "$work"
tar czf "$out/gpu-results.tgz" --exclude='*.build.log' --exclude='exp-nccl4-*' --exclude='exp-ddp4' \
  --exclude='capture-nccl4-*' exp-* capture-* *.out *.err *.result count-* 2>/dev/null
# The four-GPU NCCL runs apart (their raw streams are kept): under 16 MiB each.
ls -d exp-nccl4-* exp-ddp4 >/dev/null 2>&1 &&
  tar czf "$out/gpu-nccl4.tgz" exp-nccl4-* exp-ddp4 ncclcoll-* ncclcap-* count-nccl4-* count-ddp4 2>/dev/null
ls -d capture-nccl4-* >/dev/null 2>&1 && tar czf "$out/gpu-nccl4-capture.tgz" capture-nccl4-* 2>/dev/null
ls -la "$out"
