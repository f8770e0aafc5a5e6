use std::collections::HashMap;

use cube::{CnodeId, LocationId};
use merge::inputs::RegionDef;
use merge::layout::{LocationPlan, LocationRole};
use merge::sink::Message;
use merge::{Extra, Record, Sink, Work};
use otf2::{Definitions, LocationGroupType, LocationType as OtfLocationType};
use raw::{CopyKind, Paradigm, RegionRole};

use super::*;
use crate::call_tree::ROOT;

const SEND: usize = 0;
const RECV: usize = 1;
const ALLREDUCE: usize = 2;
const KERNEL: usize = 3;
const COPY: usize = 4;
const MEMSET: usize = 5;
const RANGE: usize = 6;
const LAUNCH: usize = 7;
/// Sampled functions (from `sampled_base`, 8, on): `main` and `hot_a`.
const MAIN: usize = 8;
const HOT_A: usize = 9;

fn region(name: &str, paradigm: Paradigm, role: RegionRole) -> RegionDef {
    RegionDef { name: name.into(), canonical: String::new(), paradigm, role, group: String::new() }
}

/// A profile of one MPI rank with a thread (location 0) and a GPU stream
/// (location 1 << 20), and a second rank's thread (location 1 << 32).
fn profile() -> Profile {
    let mut defs = Definitions::new();
    let machine = defs.system_tree_node("machine", "machine", None);
    let host = defs.system_tree_node("node0", "node", Some(machine));
    let rank0 = defs.location_group("MPI Rank 0", LocationGroupType::Process, host, None);
    let rank1 = defs.location_group("MPI Rank 1", LocationGroupType::Process, host, None);
    let gpu = defs.system_tree_node("CUDA Device 0", "GPU", Some(host));
    let ctx = defs.location_group("CUDA Context 1 of rank 0", LocationGroupType::Accelerator, gpu, Some(rank0));
    defs.location(0, "Master thread", OtfLocationType::CpuThread, rank0).unwrap();
    defs.location(1 << 20, "CUDA[0:7] rank 0", OtfLocationType::AcceleratorStream, ctx).unwrap();
    defs.location(1 << 32, "Master thread", OtfLocationType::CpuThread, rank1).unwrap();
    let regions = vec![
        region("MPI_Send", Paradigm::Mpi, RegionRole::Point2Point),
        region("MPI_Recv", Paradigm::Mpi, RegionRole::Point2Point),
        region("MPI_Allreduce", Paradigm::Mpi, RegionRole::CollAll2All),
        region("saxpy(float*)", Paradigm::Cuda, RegionRole::Function),
        region("[CUDA memcpy HtoD]", Paradigm::Cuda, RegionRole::DataTransfer),
        region("[CUDA memset]", Paradigm::Cuda, RegionRole::DataTransfer),
        region("step", Paradigm::Nvtx, RegionRole::Code),
        region("cudaLaunchKernel", Paradigm::Cuda, RegionRole::Function),
        region("main", Paradigm::User, RegionRole::Function),
        region("hot_a", Paradigm::User, RegionRole::Function),
    ];
    let ranks = HashMap::from([(rank0.id(), 0), (rank1.id(), 1)]);
    let mut p = Profile::new();
    let command = vec!["/usr/bin/ring".to_string(), "10".to_string()];
    p.setup(&command, regions, &defs.system_tree(), &ranks).unwrap();
    p
}

fn at(p: &mut Profile, location: u64) {
    let plan = LocationPlan {
        location: otf2::LocationRef::from_id(location),
        feeds: vec![],
        role: LocationRole::Host,
        main: false,
    };
    p.begin_location(0, &plan);
}

fn enter(p: &mut Profile, t: u64, index: usize, work: Work) {
    p.enter(t, &[], otf2::RegionRef::from_id(index as u32), index, work).unwrap();
}

/// Leaves the innermost region, entered at `since`.
fn leave(p: &mut Profile, t: u64, since: u64) {
    p.leave(t, &[], otf2::RegionRef::from_id(0), 0, t - since).unwrap();
}

fn message(bytes: u64) -> Message {
    Message { peer: 1, comm: None, tag: 0, bytes, request: None, nccl: false }
}

/// The call-tree node of a path of region indices under the root (the
/// profile finished).
fn node(p: &mut Profile, path: &[usize]) -> CnodeId {
    p.finish();
    let mut n = ROOT;
    for &index in path {
        n = p.children[&((u64::from(n) << 32) | index as u64)];
    }
    p.cnodes[n as usize]
}

fn location(p: &Profile, id: u64) -> LocationId {
    p.locations[&id]
}

fn value(p: &mut Profile, metric: &str, path: &[usize], loc: u64) -> cube::Value {
    let i = METRICS.iter().position(|m| m.0 == metric).unwrap();
    let c = node(p, path);
    p.cube.get(p.metrics[i], c, location(p, loc)).unwrap()
}

fn u(p: &mut Profile, metric: &str, path: &[usize], loc: u64) -> u64 {
    match value(p, metric, path, loc) {
        cube::Value::U64(v) => v,
        v => panic!("{metric}: {v:?}"),
    }
}

fn secs(p: &mut Profile, metric: &str, path: &[usize], loc: u64) -> f64 {
    match value(p, metric, path, loc) {
        cube::Value::F64(v) => v,
        v => panic!("{metric}: {v:?}"),
    }
}

#[test]
fn host_regions_nest_into_call_paths_with_visits_time_and_bytes() {
    let mut p = profile();
    at(&mut p, 0);
    // 1000: step { Send 64 B, Recv 32 B, Allreduce (8 out, 16 in) } twice, then a Send at the top.
    for base in [1000, 2000] {
        enter(&mut p, base, RANGE, Work::Call);
        enter(&mut p, base + 100, SEND, Work::Call);
        p.send(base + 110, &[], &message(64)).unwrap();
        leave(&mut p, base + 200, base + 100);
        enter(&mut p, base + 300, RECV, Work::Call);
        p.recv(base + 390, &[], &message(32)).unwrap();
        leave(&mut p, base + 400, base + 300);
        enter(&mut p, base + 500, ALLREDUCE, Work::Call);
        let end = Record::CollectiveEnd { collective: None, sent: 8, received: 16, request: None, nccl: false };
        p.record(base + 590, &[], &end).unwrap();
        leave(&mut p, base + 600, base + 500);
        leave(&mut p, base + 700, base);
    }
    enter(&mut p, 3000, SEND, Work::Call);
    p.send(3010, &[], &message(1)).unwrap();
    leave(&mut p, 3100, 3000);
    p.end_location();

    assert_eq!(p.call_paths(), 1 + 1 + 3 + 1, "root, step, its three calls, the top-level send");
    assert_eq!(u(&mut p, "visits", &[], 0), 1);
    assert_eq!(u(&mut p, "visits", &[RANGE], 0), 2);
    assert_eq!(u(&mut p, "visits", &[RANGE, SEND], 0), 2);
    assert_eq!(u(&mut p, "visits", &[SEND], 0), 1);
    // Inclusive time: the root spans the location, first event to last.
    assert_eq!(secs(&mut p, "time", &[], 0), 2100e-9);
    assert_eq!(secs(&mut p, "time", &[RANGE], 0), 1400e-9);
    assert_eq!(secs(&mut p, "time", &[RANGE, SEND], 0), 200e-9);
    assert_eq!(u(&mut p, "bytes_sent", &[RANGE, SEND], 0), 128);
    assert_eq!(u(&mut p, "bytes_received", &[RANGE, RECV], 0), 64);
    assert_eq!(u(&mut p, "bytes_sent", &[RANGE, ALLREDUCE], 0), 16);
    assert_eq!(u(&mut p, "bytes_received", &[RANGE, ALLREDUCE], 0), 32);
    assert_eq!(u(&mut p, "bytes_sent", &[SEND], 0), 1);
    // Bytes are exclusive: nothing at the range itself.
    assert_eq!(u(&mut p, "bytes_sent", &[RANGE], 0), 0);
    // No GPU work on a host thread.
    assert_eq!(secs(&mut p, "kernel_time", &[], 0), 0.0);
}

#[test]
fn gpu_work_sits_under_the_streams_root_with_its_time_and_bytes() {
    let mut p = profile();
    let stream = 1 << 20;
    at(&mut p, stream);
    enter(&mut p, 100, COPY, Work::Copy { kind: CopyKind::HostToDevice, bytes: 4096 });
    leave(&mut p, 150, 100);
    for (start, end) in [(200, 260), (300, 340), (400, 500)] {
        enter(&mut p, start, KERNEL, Work::Kernel);
        leave(&mut p, end, start);
    }
    enter(&mut p, 600, MEMSET, Work::Memset { bytes: 512 });
    leave(&mut p, 610, 600);
    // A metric sample after the last work does not stretch the stream.
    let metric = Record::Metric { metric: otf2::MetricRef::from_id(0), value: 3 };
    p.record(900, &[], &metric).unwrap();
    p.end_location();

    assert_eq!(u(&mut p, "visits", &[KERNEL], stream), 3);
    assert_eq!(secs(&mut p, "kernel_time", &[KERNEL], stream), 200e-9);
    assert_eq!(secs(&mut p, "time", &[KERNEL], stream), 200e-9);
    // Inclusive GPU time at the root: the sum of its kernels.
    assert_eq!(secs(&mut p, "kernel_time", &[], stream), 200e-9);
    assert_eq!(secs(&mut p, "copy_time", &[], stream), 50e-9);
    assert_eq!(u(&mut p, "copy_bytes", &[COPY], stream), 4096);
    assert_eq!(secs(&mut p, "memset_time", &[MEMSET], stream), 10e-9);
    assert_eq!(u(&mut p, "memset_bytes", &[MEMSET], stream), 512);
    // The stream's span: its first work to its last.
    assert_eq!(secs(&mut p, "time", &[], stream), 510e-9);
    // Copy bytes are exclusive: not repeated at the root.
    assert_eq!(u(&mut p, "copy_bytes", &[], stream), 0);
}

#[test]
fn locations_share_call_paths_but_not_values() {
    let mut p = profile();
    for (loc, dur) in [(0u64, 10u64), (1 << 32, 30)] {
        at(&mut p, loc);
        enter(&mut p, 100, SEND, Work::Call);
        leave(&mut p, 100 + dur, 100);
        p.end_location();
    }
    assert_eq!(p.call_paths(), 2);
    assert_eq!(secs(&mut p, "time", &[SEND], 0), 10e-9);
    assert_eq!(secs(&mut p, "time", &[SEND], 1 << 32), 30e-9);
    // The stream had nothing: no visit of the root there.
    assert_eq!(u(&mut p, "visits", &[], 1 << 20), 0);
}

#[test]
fn a_region_inside_itself_is_a_call_path_of_its_own() {
    let mut p = profile();
    at(&mut p, 0);
    enter(&mut p, 0, RANGE, Work::Call);
    enter(&mut p, 10, RANGE, Work::Call);
    leave(&mut p, 20, 10);
    leave(&mut p, 30, 0);
    p.end_location();
    assert_eq!(u(&mut p, "visits", &[RANGE], 0), 1);
    assert_eq!(u(&mut p, "visits", &[RANGE, RANGE], 0), 1);
    assert_eq!(secs(&mut p, "time", &[RANGE], 0), 30e-9);
    assert_eq!(secs(&mut p, "time", &[RANGE, RANGE], 0), 10e-9);
}

#[test]
fn the_system_tree_and_root_are_the_archives() {
    let mut p = profile();
    at(&mut p, 0);
    enter(&mut p, 0, SEND, Work::Call);
    leave(&mut p, 5, 0);
    p.end_location();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("profile.cubex");
    let size = p.write_to(&path).unwrap();
    assert!(size > 0);
    let bytes = std::fs::read(&path).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    for want in [
        "<name>ring</name>\n<mangled_name>/usr/bin/ring 10</mangled_name>\n<paradigm>measurement</paradigm>\n<role>artificial</role>",
        "<name>MPI_Send</name>\n<mangled_name>MPI_Send</mangled_name>\n<paradigm>mpi</paradigm>\n<role>point2point</role>",
        "<name>MPI Rank 1</name>\n<rank>1</rank>\n<type>process</type>",
        "<name>CUDA Context 1 of rank 0</name>\n<rank>0</rank>\n<type>accelerator</type>",
        "<name>CUDA[0:7] rank 0</name>\n<rank>0</rank>\n<type>accelerator stream</type>",
        "<name>CUDA Device 0</name>\n<class>GPU</class>",
    ] {
        assert!(text.contains(want), "{want}\n{text}");
    }
    // Regions never entered are not in the profile.
    assert!(!text.contains("MPI_Recv"));
}

/// Location 0 calls MPI_Send; location 1 << 32 calls MPI_Recv inside
/// MPI_Allreduce, then MPI_Send.
fn feed(p: &mut Profile, location: u64) {
    at(p, location);
    if location == 0 {
        enter(p, 10, SEND, Work::Call);
        p.send(11, &[], &message(64)).unwrap();
        leave(p, 20, 10);
    } else {
        enter(p, 5, ALLREDUCE, Work::Call);
        enter(p, 6, RECV, Work::Call);
        p.recv(7, &[], &message(32)).unwrap();
        leave(p, 9, 6);
        leave(p, 12, 5);
        enter(p, 13, SEND, Work::Call);
        leave(p, 15, 13);
    }
    p.end_location();
}

fn totals(p: &mut Profile) -> Vec<u64> {
    vec![
        u(p, "visits", &[SEND], 0),
        u(p, "bytes_sent", &[SEND], 0),
        u(p, "visits", &[ALLREDUCE, RECV], 1 << 32),
        u(p, "bytes_received", &[ALLREDUCE, RECV], 1 << 32),
        u(p, "visits", &[SEND], 1 << 32),
        secs(p, "time", &[ALLREDUCE], 1 << 32).to_bits(),
    ]
}

#[test]
fn a_split_profile_joined_or_sent_as_bytes_is_the_whole_one() {
    let mut whole = profile();
    feed(&mut whole, 0);
    feed(&mut whole, 1 << 32);
    let want = totals(&mut whole);

    let mut joined = profile();
    let mut part = joined.split().unwrap();
    feed(&mut part, 1 << 32);
    feed(&mut joined, 0);
    joined.join(part);
    assert_eq!(totals(&mut joined), want);

    let mut received = profile();
    let mut other = profile();
    feed(&mut other, 1 << 32);
    feed(&mut received, 0);
    assert!(received.join_encoded(&other.encode().unwrap()));
    assert_eq!(totals(&mut received), want);
    assert!(!received.join_encoded(&[1, 2, 3]));
}

/// The profile with sampled contexts `main` (10) > `hot_a` (11), and the
/// call leaves `MPI_Allreduce` (20) and `cudaLaunchKernel` (21) called
/// from `hot_a`.
fn with_contexts() -> Profile {
    let mut p = profile();
    p.sampled_base = MAIN;
    let mut s = merge::layout::Sampled::default();
    s.contexts.insert(10, (None, 0));
    s.contexts.insert(11, (Some(10), 1));
    s.leaves.insert(20, (Some(11), ALLREDUCE));
    s.leaves.insert(21, (Some(11), LAUNCH));
    p.sampled = std::sync::Arc::new(s);
    p
}

fn cx(id: u32) -> merge::sink::InContext {
    merge::sink::InContext { context: otf2::CallingContextRef::from_id(id), depth: 3 }
}

fn enter_in(p: &mut Profile, t: u64, index: usize, context: u32) {
    p.enter_in(t, &[], otf2::RegionRef::from_id(index as u32), index, Work::Call, cx(context)).unwrap();
}

#[test]
fn a_call_in_its_calling_context_sits_under_its_callers_functions() {
    let mut p = with_contexts();
    at(&mut p, 0);
    enter_in(&mut p, 10, ALLREDUCE, 20);
    leave(&mut p, 30, 10);
    enter_in(&mut p, 40, ALLREDUCE, 20);
    leave(&mut p, 50, 40);
    // Inside an NVTX range: the caller's path under the range.
    enter(&mut p, 60, RANGE, Work::Call);
    enter_in(&mut p, 61, ALLREDUCE, 20);
    leave(&mut p, 71, 61);
    leave(&mut p, 80, 60);
    p.end_location();

    assert_eq!(u(&mut p, "visits", &[MAIN, HOT_A, ALLREDUCE], 0), 2);
    assert!((secs(&mut p, "time", &[MAIN, HOT_A, ALLREDUCE], 0) - 30e-9).abs() < 1e-15);
    // The functions above it were not entered: their time is their calls'.
    assert_eq!(u(&mut p, "visits", &[MAIN], 0), 0);
    assert!((secs(&mut p, "time", &[MAIN], 0) - 30e-9).abs() < 1e-15);
    assert!((secs(&mut p, "time", &[MAIN, HOT_A], 0) - 30e-9).abs() < 1e-15);
    assert_eq!(u(&mut p, "visits", &[RANGE, MAIN, HOT_A, ALLREDUCE], 0), 1);
    assert!((secs(&mut p, "time", &[RANGE], 0) - 20e-9).abs() < 1e-15, "the range as measured");
    assert!((secs(&mut p, "time", &[], 0) - 70e-9).abs() < 1e-15);
    assert!(!p.children.contains_key(&((u64::from(ROOT) << 32) | ALLREDUCE as u64)), "no call at the top");
}

#[test]
fn gpu_work_sits_under_the_call_path_of_its_launch() {
    let mut p = with_contexts();
    at(&mut p, 0);
    enter_in(&mut p, 10, LAUNCH, 21);
    leave(&mut p, 12, 10);
    p.end_location();
    let stream = 1 << 20;
    at(&mut p, stream);
    p.launched_from(cx(21));
    enter(&mut p, 20, KERNEL, Work::Kernel);
    leave(&mut p, 120, 20);
    // A kernel whose launch had no call path: at the stream's root.
    enter(&mut p, 130, KERNEL, Work::Kernel);
    leave(&mut p, 140, 130);
    p.end_location();

    assert_eq!(u(&mut p, "visits", &[MAIN, HOT_A, LAUNCH], 0), 1);
    assert_eq!(u(&mut p, "visits", &[MAIN, HOT_A, LAUNCH, KERNEL], stream), 1);
    assert_eq!(u(&mut p, "visits", &[MAIN, HOT_A, LAUNCH], stream), 0);
    for path in [&[MAIN][..], &[MAIN, HOT_A], &[MAIN, HOT_A, LAUNCH], &[MAIN, HOT_A, LAUNCH, KERNEL]] {
        assert!((secs(&mut p, "kernel_time", path, stream) - 100e-9).abs() < 1e-15, "{path:?}");
        assert!((secs(&mut p, "time", path, stream) - 100e-9).abs() < 1e-15, "{path:?}");
    }
    assert_eq!(u(&mut p, "visits", &[KERNEL], stream), 1);
    assert!((secs(&mut p, "kernel_time", &[], stream) - 110e-9).abs() < 1e-15);
    assert!((secs(&mut p, "time", &[], stream) - 120e-9).abs() < 1e-15);
}
