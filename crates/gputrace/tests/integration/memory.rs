//! Memory and unified memory without a GPU: CUPTI records built from the
//! bindings' own structs (`MEMORY2`, `MEMORY_POOL`,
//! `UNIFIED_MEMORY_COUNTER`, as CUDA 12.9's and 13.0's CUPTI write them)
//! describing what tests/gpu/programs/cuda_memory.cu and cuda_managed.cu
//! do, replayed through the agent's decoding and conversion, merged by
//! `gputrace merge`, and checked by tests/gpu/check_archives.py (the
//! independent Python reader) and `gputrace stats`. The same checks read
//! the real captures of the GPU runs.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use cupti_sys::{self as sys, v12_9, v13_0};
use gputrace_cuda::capture::Capture;
use gputrace_cuda::convert::Enabled;
use gputrace_cuda::records::{MemoryOp, Record};

use crate::util::*;

/// The bytes of a record struct, as CUPTI leaves them in its buffer.
fn bytes_of<T: Copy>(r: &T) -> Vec<u8> {
    // SAFETY: `r` is a plain C struct (bindgen output) of `size_of::<T>()`
    // initialized bytes (zeroed, then fields set).
    unsafe { std::slice::from_raw_parts((r as *const T).cast::<u8>(), std::mem::size_of::<T>()) }.to_vec()
}

fn zeroed<T: Copy>() -> T {
    // SAFETY: record structs are integers, arrays and raw pointers, for
    // which all-zero bytes are a valid value.
    unsafe { std::mem::zeroed() }
}

const NAME_PTR: u64 = 0x5000;

/// A capture of CUPTI `api` (28: CUDA 12.9; 130_001: 13.0) holding a
/// device record for GPU 0 and `records`.
fn capture(api: u32, major: u32, records: Vec<Vec<u8>>) -> Capture {
    let mut d: v12_9::CUpti_ActivityDevice5 = zeroed();
    d.kind = sys::CUPTI_ACTIVITY_KIND_DEVICE;
    d.id = 0;
    d.name = NAME_PTR as *const _;
    d.globalMemorySize = 80 << 30;
    d.numMultiprocessors = 132;
    d.computeCapabilityMajor = 9;
    d.uuid.bytes = [7; 16];
    let mut all = vec![bytes_of(&d)];
    all.extend(records);
    Capture {
        api_version: api,
        library_major: major,
        dropped: 0,
        records: all,
        strings: HashMap::from([(NAME_PTR, "NVIDIA H100 80GB HBM3".to_string())]),
        api_names: HashMap::new(),
        copy_ends: HashMap::new(),
    }
}

/// What cuda_memory.cu does (with 3 rounds), as CUDA 12.9's CUPTI
/// records it, and the program's "expect" lines.
struct Program {
    records: Vec<Vec<u8>>,
    expect: String,
    time: u64,
    correlation: u32,
    next_address: u64,
    /// Free records without size and memory kind (as a CUPTI may write
    /// them): the agent takes both from the allocation.
    frees_say_less: bool,
}

#[derive(Default)]
struct Count {
    allocs: u64,
    alloc_bytes: u64,
    frees: u64,
    freed_bytes: u64,
}

impl Program {
    fn new() -> Program {
        Program {
            records: Vec::new(),
            expect: String::new(),
            time: 1_000_000,
            correlation: 10,
            next_address: 0x7f00_0000_0000,
            frees_say_less: false,
        }
    }

    /// One `MEMORY2` record (`CUpti_ActivityMemory4`); returns the address.
    fn memory(&mut self, alloc: bool, kind: u32, address: u64, bytes: u64, stream: u32, pool: u32) -> u64 {
        let mut m: v12_9::CUpti_ActivityMemory4 = zeroed();
        m.kind = sys::CUPTI_ACTIVITY_KIND_MEMORY2;
        m.memoryOperationType = if alloc {
            sys::CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION
        } else {
            sys::CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE
        };
        m.memoryKind = kind;
        m.correlationId = self.correlation;
        m.address = address;
        m.bytes = bytes;
        m.timestamp = self.time;
        m.processId = 4242;
        m.deviceId = 0;
        m.contextId = 1;
        m.streamId = stream;
        m.isAsync = u32::from(pool != 0);
        m.memoryPoolConfig.memoryPoolType = pool;
        m.memoryPoolConfig.address = if pool != 0 { 0x7e00_0000_0000 } else { 0 };
        self.correlation += 1;
        self.time += 1_500;
        self.records.push(bytes_of(&m));
        address
    }

    fn alloc(&mut self, kind: u32, bytes: u64, stream: u32, pool: u32, c: &mut Count) -> u64 {
        let address = self.next_address;
        self.next_address += bytes.next_multiple_of(1 << 21);
        c.allocs += 1;
        c.alloc_bytes += bytes;
        self.memory(true, kind, address, bytes, stream, pool)
    }

    fn free(&mut self, kind: u32, address: u64, bytes: u64, stream: u32, pool: u32, c: &mut Count) {
        c.frees += 1;
        c.freed_bytes += bytes;
        if self.frees_say_less {
            self.memory(false, sys::CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN, address, 0, stream, pool);
        } else {
            self.memory(false, kind, address, bytes, stream, pool);
        }
    }

    fn pool(&mut self, op: u32) {
        let mut p: v12_9::CUpti_ActivityMemoryPool2 = zeroed();
        p.kind = sys::CUPTI_ACTIVITY_KIND_MEMORY_POOL;
        p.memoryPoolOperationType = op;
        p.memoryPoolType = sys::CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
        p.correlationId = self.correlation;
        p.deviceId = 0;
        p.address = 0x7e00_0000_0000;
        p.size = 32 << 20;
        p.releaseThreshold = 0;
        p.timestamp = self.time;
        self.correlation += 1;
        self.time += 1_500;
        self.records.push(bytes_of(&p));
    }

    fn print(&mut self, kind: &str, c: &Count) {
        for (key, v) in
            [("alloc", c.allocs), ("alloc bytes", c.alloc_bytes), ("free", c.frees), ("free bytes", c.freed_bytes)]
        {
            let (op, what) = key.split_once(' ').unwrap_or((key, "n"));
            self.expect.push_str(&format!("expect {op} {kind} {what} {v}\n"));
        }
    }
}

const DEVICE: u32 = sys::CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
const PINNED: u32 = sys::CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
const MANAGED: u32 = sys::CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
const LOCAL_POOL: u32 = sys::CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;

/// The records cuda_memory.cu's run makes: the same allocations in the
/// same order.
fn cuda_memory(rounds: u64) -> Program {
    let mut p = Program::new();
    let (mut dev, mut pin, mut asynchronous) = (Count::default(), Count::default(), Count::default());
    for _ in 0..rounds {
        let mut held = Vec::new();
        for i in 0..4u64 {
            let d = p.alloc(DEVICE, (i + 1) << 20, 0, 0, &mut dev);
            let h = p.alloc(PINNED, (i + 1) * (64 << 10), 0, 0, &mut pin);
            held.push((d, h, i));
        }
        for (d, h, i) in held {
            p.free(DEVICE, d, (i + 1) << 20, 0, 0, &mut dev);
            p.free(PINNED, h, (i + 1) * (64 << 10), 0, 0, &mut pin);
        }
    }
    let (leak_dev, leak_pin) = (3u64 << 20, 192u64 << 10);
    p.alloc(DEVICE, leak_dev, 0, 0, &mut dev);
    p.alloc(PINNED, leak_pin, 0, 0, &mut pin);
    p.pool(sys::CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED);
    p.frees_say_less = true;
    for _ in 0..rounds {
        let mut held = Vec::new();
        for i in 0..6u64 {
            let b = (i + 1) * (256 << 10);
            held.push((p.alloc(DEVICE, b, 13, LOCAL_POOL, &mut asynchronous), b));
        }
        for (a, b) in held {
            p.free(DEVICE, a, b, 13, LOCAL_POOL, &mut asynchronous);
        }
    }
    p.pool(sys::CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED);
    p.expect.push_str(&format!("cuda_memory: {rounds} rounds\n"));
    p.print("device", &dev);
    p.print("pinned", &pin);
    p.print("device, async", &asynchronous);
    p.expect.push_str(&format!(
        "expect leak device n 1\nexpect leak device bytes {leak_dev}\nexpect leak pinned n 1\n\
         expect leak pinned bytes {leak_pin}\nexpect leaked bytes {}\nexpect pools created 1\n\
         expect pools destroyed 1\n",
        leak_dev + leak_pin
    ));
    p
}

/// One `UNIFIED_MEMORY_COUNTER` record as CUDA 13.0's CUPTI writes it.
fn uvm(kind: u32, value: u64, start: u64, end: u64, src: u32, dst: u32) -> Vec<u8> {
    let mut u: v13_0::CUpti_ActivityUnifiedMemoryCounter3 = zeroed();
    u.kind = sys::CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
    u.counterKind = kind;
    u.value = value;
    u.start = start;
    u.end = end;
    u.address = 0x7f00_0000_0000;
    u.srcId = src;
    u.dstId = dst;
    u.processId = 4243;
    bytes_of(&u)
}

/// What cuda_managed.cu does with 64 MiB, as CUDA 13.0's CUPTI records
/// it: the managed allocation, host faults, GPU fault groups with HtoD
/// migrations, then host faults with DtoH migrations, and the free.
fn cuda_managed() -> (Vec<Vec<u8>>, String, [u64; 4]) {
    let bytes = 64u64 << 20;
    let mut p = Program::new();
    let mut c = Count::default();
    let a = p.alloc(MANAGED, bytes, 0, 0, &mut c);
    let mut records = std::mem::take(&mut p.records);
    // A 13.0 pool record too: MemoryPool3's layout.
    let mut pool: v13_0::CUpti_ActivityMemoryPool3 = zeroed();
    pool.kind = sys::CUPTI_ACTIVITY_KIND_MEMORY_POOL;
    pool.memoryPoolOperationType = sys::CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED;
    pool.memoryPoolType = LOCAL_POOL;
    pool.size = 4 << 20;
    pool.utilizedSize = 1 << 20;
    pool.timestamp = 1_100_000;
    records.push(bytes_of(&pool));
    let (mut cpu, mut gpu, mut htod, mut dtoh) = (0, 0, 0, 0);
    let mut t = 2_000_000;
    let cpu_id = u32::MAX;
    for _ in 0..16 {
        records.push(uvm(sys::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_GPU_PAGE_FAULT, 3, t, t + 800, 0, 0));
        records.push(uvm(
            sys::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD,
            4 << 20,
            t + 900,
            t + 2_000,
            cpu_id,
            0,
        ));
        gpu += 3;
        htod += 4 << 20;
        t += 3_000;
    }
    for _ in 0..8 {
        records.push(uvm(sys::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT, 1, t, t, 0, 0));
        records.push(uvm(
            sys::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH,
            2 << 20,
            t + 100,
            t + 700,
            0,
            cpu_id,
        ));
        cpu += 1;
        dtoh += 2 << 20;
        t += 1_000;
    }
    p.time = t;
    p.free(MANAGED, a, bytes, 0, 0, &mut c);
    records.append(&mut p.records);
    let expect = format!(
        "cuda_managed: 64 MiB, concurrent managed access 1, sum right\nexpect managed bytes {bytes}\n\
         expect alloc managed n 1\nexpect alloc managed bytes {bytes}\nexpect free managed n 1\n\
         expect free managed bytes {bytes}\nexpect concurrent 1\n"
    );
    (records, expect, [cpu, gpu, htod, dtoh])
}

fn enabled(spec: &str) -> Enabled {
    Enabled::from_set(
        &config::Config::from_pairs(&[("GPUTRACE_CUDA_ENABLE".to_string(), spec.to_string())]).unwrap().cuda_enable,
    )
}

/// Replays `captures` into `results/exp-<name>`, merges it and writes
/// `<name>.out`: the layout check_archives.py reads.
fn replay_and_merge(results: &Path, name: &str, captures: &[Capture], expect: &str, spec: &str) {
    let exp = results.join(format!("exp-{name}"));
    gputrace_cuda::replay::replay(captures, &exp, gpu_node_header(4242, name), enabled(spec)).unwrap();
    std::fs::write(results.join(format!("{name}.out")), expect).unwrap();
    let out = run(Command::new(gputrace()).arg("merge").arg(&exp));
    assert!(out.status.success(), "{}", text(&out.stderr));
}

fn stats_csv(exp: &Path, report: &str) -> Vec<Vec<String>> {
    let out = run(Command::new(gputrace()).args(["stats", "--format", "csv", "--report", report]).arg(exp));
    assert!(out.status.success(), "{}", text(&out.stderr));
    text(&out.stdout).lines().filter(|l| !l.is_empty()).map(|l| l.split(',').map(str::to_string).collect()).collect()
}

#[test]
fn memory_records_decode_from_every_layout() {
    let program = cuda_memory(1);
    let c = capture(28, 12, program.records.clone());
    let records = gputrace_cuda::replay::decode(&c).unwrap();
    let ops: Vec<MemoryOp> =
        records.iter().filter_map(|r| if let Record::Memory(m) = r { Some(*m) } else { None }).collect();
    // 4 device + 4 pinned allocations and frees, 2 leaks, 6 async of each.
    assert_eq!(ops.len(), 8 + 8 + 2 + 12, "{ops:?}");
    assert_eq!(
        ops[0],
        MemoryOp {
            alloc: true,
            memory: DEVICE,
            address: 0x7f00_0000_0000,
            bytes: 1 << 20,
            time: 1_000_000,
            device: 0,
            context: 1,
            stream: 0,
            correlation: 10,
            is_async: false,
            pool_type: 0,
            pool: 0,
        }
    );
    let freed_async = ops.iter().find(|m| !m.alloc && m.is_async).unwrap();
    assert_eq!((freed_async.stream, freed_async.pool_type, freed_async.pool), (13, LOCAL_POOL, 0x7e00_0000_0000));
    let pools: Vec<_> = records.iter().filter_map(|r| if let Record::Pool(p) = r { Some(*p) } else { None }).collect();
    assert_eq!(pools.iter().map(|p| p.op).collect::<Vec<_>>(), [1, 2]);
    assert_eq!((pools[0].size, pools[0].pool_type), (32 << 20, LOCAL_POOL));

    // CUDA 13.0: MemoryPool3 and UnifiedMemoryCounter3.
    let (uvm_records, _, _) = cuda_managed();
    let records = gputrace_cuda::replay::decode(&capture(130_001, 13, uvm_records)).unwrap();
    let pool = records.iter().find_map(|r| if let Record::Pool(p) = r { Some(*p) } else { None }).unwrap();
    assert_eq!((pool.op, pool.size, pool.utilized), (3, 4 << 20, 1 << 20));
    let counters: Vec<_> =
        records.iter().filter_map(|r| if let Record::Uvm(u) = r { Some(*u) } else { None }).collect();
    assert_eq!(counters.len(), 48);
    let htod = counters.iter().find(|u| u.kind == 1).unwrap();
    assert_eq!((htod.value, htod.start, htod.end, htod.src, htod.dst), (4 << 20, 2_000_900, 2_002_000, u32::MAX, 0));
    // And the CUDA 12.6 layout (UnifiedMemoryCounter2), read by API 24.
    let mut u: v12_9::CUpti_ActivityUnifiedMemoryCounter2 = zeroed();
    u.kind = sys::CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER;
    u.counterKind = sys::CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_CPU_PAGE_FAULT_COUNT;
    u.value = 5;
    let v = cupti_sys::CuptiVersion::from_api(24, Some(12)).unwrap();
    match gputrace_cuda::records::decode(v, &bytes_of(&u)) {
        Some(Record::Uvm(c)) => assert_eq!((c.kind, c.value), (3, 5)),
        other => panic!("{other:?}"),
    }
}

#[test]
fn memory_and_uvm_merge_into_archives_the_python_reader_checks() {
    let results = fresh_dir("memory-results");
    std::fs::create_dir_all(&results).unwrap();
    let program = cuda_memory(3);
    // Two buffers, as CUPTI hands them over.
    let half = program.records.len() / 2;
    let captures = [
        capture(28, 12, program.records[..half].to_vec()),
        Capture { records: program.records[half..].to_vec(), ..capture(28, 12, Vec::new()) },
    ];
    replay_and_merge(&results, "memory", &captures, &program.expect, "default,memory");
    let (records, expect, [cpu, gpu, htod, dtoh]) = cuda_managed();
    replay_and_merge(&results, "uvm", &[capture(130_001, 13, records)], &expect, "default,memory,uvm");
    let report = check_archives(&results);
    assert_reported(
        &report,
        &[
            "ok   memory: alloc device: count and bytes",
            "ok   memory: free device, async: count and bytes",
            "ok   memory: leaked pinned: count and bytes",
            "ok   memory: nothing else leaked",
            "ok   memory: memory in use ends at the leaked bytes",
            "ok   memory: memory in use peaks where the allocations say",
            "ok   memory: memory pools created",
            "ok   uvm: alloc managed: count and bytes",
            "ok   uvm: GPU page faults > 0",
            "ok   uvm: bytes migrated DtoH > 0",
        ],
    );

    // gputrace stats: the same numbers.
    let rows = stats_csv(&results.join("exp-memory"), "cuda_mem_sum");
    let row = |kind: &str| rows.iter().find(|r| r.get(2).map(String::as_str) == Some(kind)).cloned().unwrap();
    let dev = row("device");
    // Allocations, bytes, frees, bytes, peak, leaked, leaked bytes.
    let mib = 1u64 << 20;
    assert_eq!(
        dev[3..],
        [13, 3 * 10 * mib + 3 * mib, 12, 3 * 10 * mib, 10 * mib, 1, 3 * mib].map(|v| v.to_string()),
        "{rows:?}"
    );
    let all = row("all");
    assert_eq!(all[9], (3 * mib + (192 << 10)).to_string(), "{rows:?}");
    let leaks = stats_csv(&results.join("exp-memory"), "cuda_mem_leaks");
    assert_eq!(leaks.len(), 3, "{leaks:?}");
    assert_eq!((leaks[1][2].as_str(), leaks[1][4].as_str()), ("device", "3145728"), "{leaks:?}");
    assert_eq!((leaks[2][2].as_str(), leaks[2][4].as_str()), ("pinned", "196608"), "{leaks:?}");
    let largest = stats_csv(&results.join("exp-memory"), "cuda_mem_largest");
    assert_eq!(largest[1][4], (4 * mib).to_string(), "{largest:?}");
    let uvm = stats_csv(&results.join("exp-uvm"), "cuda_uvm_sum");
    let total = |name: &str| uvm.iter().find(|r| r[2] == name).map(|r| r[3].clone()).unwrap();
    assert_eq!(total("CPU page faults"), cpu.to_string(), "{uvm:?}");
    assert_eq!(total("GPU page faults"), gpu.to_string(), "{uvm:?}");
    assert_eq!(total("bytes HtoD"), htod.to_string(), "{uvm:?}");
    assert_eq!(total("bytes DtoH"), dtoh.to_string(), "{uvm:?}");
    // The short form after a run: the memory table, not the lists.
    let out = run(Command::new(gputrace()).args(["stats", "--short"]).arg(results.join("exp-memory")));
    let short = text(&out.stdout);
    assert!(out.status.success() && short.contains("(cuda_mem_sum)"), "{short}");
    assert!(!short.contains("cuda_mem_leaks") && !short.contains("cuda_mem_largest"), "{short}");
    // Allocations are not API calls: no time of theirs in cuda_api_sum.
    let api = stats_csv(&results.join("exp-memory"), "cuda_api_sum");
    assert!(
        api.iter().flatten().all(|c| !c.starts_with("CUDA alloc") && !c.starts_with("CUDA memory pool")),
        "{api:?}"
    );
    // NVML's report keeps to NVML's metrics.
    let gpu_metrics = stats_csv(&results.join("exp-uvm"), "gpu_metrics_sum");
    assert!(
        gpu_metrics.iter().all(|r| !r.iter().any(|c| c.contains("UVM") || c.contains("memory in use"))),
        "{gpu_metrics:?}"
    );
}

#[test]
fn memory_can_be_left_out_and_uvm_is_off_by_default() {
    use gputrace_cuda::convert::Converter;
    // A process that only allocates is traced when memory is recorded, and
    // leaves no trace when it is not (as one that only queries the GPUs).
    let program = cuda_memory(1);
    let records = gputrace_cuda::replay::decode(&capture(28, 12, program.records)).unwrap();
    let converter = |spec: &str| Converter::new(enabled(spec), 1, |_| String::new());
    assert!(converter("default,memory").has_work(&records));
    assert!(!converter("default").has_work(&records));
    let (uvm_records, _, _) = cuda_managed();
    let uvm_only: Vec<Record> = gputrace_cuda::replay::decode(&capture(130_001, 13, uvm_records.clone()))
        .unwrap()
        .into_iter()
        .filter(|r| matches!(r, Record::Uvm(_)))
        .collect();
    assert!(!converter("default,memory").has_work(&uvm_only));
    assert!(converter("kernel,uvm").has_work(&uvm_only));
    // The default records neither memory nor unified memory (their cost:
    // a process doing only those leaves no stream, as asserted above);
    // `memory` adds the allocations, not the faults.
    let results = fresh_dir("memory-default");
    std::fs::create_dir_all(&results).unwrap();
    let both = [capture(130_001, 13, uvm_records)];
    assert!(!converter("default").has_work(&gputrace_cuda::replay::decode(&both[0]).unwrap()));
    replay_and_merge(&results, "memory", &both, "", "default,memory");
    let exp = results.join("exp-memory");
    assert!(stats_csv(&exp, "cuda_mem_sum").len() > 1);
    assert!(stats_csv(&exp, "cuda_uvm_sum").len() <= 1);
}

/// The same checks on the CUPTI buffers captured on the H100 (CUDA 13.0)
/// from tests/gpu/programs/cuda_memory.cu (3 rounds) and cuda_managed.cu
/// (64 MiB), kept in tests/fixtures/cupti/cuda_memory and cuda_managed.
#[test]
fn captured_memory_and_uvm_runs_check_out() {
    let results = fresh_dir("memory-captured");
    std::fs::create_dir_all(&results).unwrap();
    for (name, fixture, spec) in
        [("memory", "cuda_memory", "default,memory"), ("uvm", "cuda_managed", "default,memory,uvm")]
    {
        let (captures, expect) = crate::cuda::fixture(fixture);
        replay_and_merge(&results, name, &captures, &expect, spec);
    }
    let report = check_archives(&results);
    assert_reported(
        &report,
        &[
            "ok   memory: alloc device: count and bytes: (14, 38797312) vs (14, 38797312)",
            "ok   memory: free device, async: count and bytes: (18, 16515072) vs (18, 16515072)",
            "ok   memory: leaked pinned: count and bytes",
            "ok   memory: memory in use ends at the leaked bytes",
            "ok   memory: every copy has its addresses",
            "ok   memory: copies out of device an allocation: count and bytes: (12, 1966080) vs (12, 1966080)",
            "ok   memory: copies into device an allocation: count and bytes: (2, 393216) vs (2, 393216)",
            "ok   memory: no copy end outside the allocations",
            "ok   uvm: alloc managed: count and bytes: (1, 67108864) vs (1, 67108864)",
            "ok   uvm: CPU page faults > 0, a count",
            "ok   uvm: HtoD migrations cover the buffer the kernel touched: 67108864 vs 67108864",
        ],
    );
    // The leak report names the two leaks with their sizes.
    let leaks = stats_csv(&results.join("exp-memory"), "cuda_mem_leaks");
    let mut sizes: Vec<&str> = leaks.iter().skip(1).filter_map(|r| r.get(4).map(String::as_str)).collect();
    sizes.sort_unstable();
    assert_eq!(sizes, ["196608", "3145728"], "{leaks:?}");
    // Copies by allocation: the 12 device buffers, the 12 pinned ones, the
    // two leaks and the VMM block (27 touched); 26 copy ends read or
    // wrote pinned or device buffers, the leaked pinned one twice.
    let copies = stats_csv(&results.join("exp-memory"), "cuda_mem_copies");
    let header = &copies[0];
    let col = |name: &str| header.iter().position(|h| h == name).unwrap_or_else(|| panic!("{name} in {header:?}"));
    let sum = |name: &str| copies.iter().skip(1).map(|r| r[col(name)].parse::<u64>().unwrap()).sum::<u64>();
    assert_eq!(copies.len() - 1, 20, "the 20 busiest of 27: {copies:?}");
    let leak = copies
        .iter()
        .find(|r| r[col("Kind")] == "pinned" && r[col("Bytes")] == "196608" && r[col("Copies Out")] == "2");
    assert!(leak.is_some(), "the leaked pinned buffer was copied out of twice: {copies:?}");
    assert!(sum("Bytes In") + sum("Bytes Out") > 0);
}

/// The CUDA memory program's raw streams (copies, memsets, allocations:
/// attributes and strings the merge defines as it meets them, on whichever
/// thread meets them) merged on 1, 2 and 3 threads: the same archive.
#[test]
fn memory_archives_merged_on_threads_are_the_serial_one() {
    let exp = fresh_dir("memory-jobs");
    let program = cuda_memory(3);
    let captures = [capture(28, 12, program.records)];
    gputrace_cuda::replay::replay(&captures, &exp, gpu_node_header(4243, "memory-jobs"), enabled("default,memory"))
        .unwrap();
    crate::parallel_merge::jobs_agree(&exp, "memory-jobs");
}

/// Two processes of the CUDA memory program merged by two MPI merge
/// ranks: rank 1 meets strings and attributes (copy kinds, memory kinds,
/// allocation attributes) of its own, which rank 0 defines and rank 1's
/// files map to (OTF2 mapping tables): the archive is the serial one.
#[test]
fn memory_archives_merged_as_an_mpi_job_are_the_serial_one() {
    let exp = fresh_dir("memory-mpi");
    // Two different programs: each process meets its strings in its own
    // order, so the two ranks number them differently.
    let program = cuda_memory(2);
    let header = gpu_node_header(4251, "memory-mpi");
    gputrace_cuda::replay::replay(&[capture(28, 12, program.records)], &exp, header, enabled("default,memory"))
        .unwrap();
    let (records, _, _) = cuda_managed();
    let header = gpu_node_header(4252, "memory-mpi");
    let uvm = enabled("default,memory,uvm");
    gputrace_cuda::replay::replay(&[capture(130_001, 13, records)], &exp, header, uvm).unwrap();
    crate::parallel_merge::mpi_agrees(&exp, "memory-mpi", &[2]);
}
