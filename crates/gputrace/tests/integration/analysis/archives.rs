//! Archives built by hand with otf2, for what the test machine
//! cannot record: two ranks on two NVLink-connected GPUs with peer copies,
//! NCCL send/recv and NVLink counters (gputrace's mapping), and a trace
//! named the way Score-P names CUDA and MPI (streams `CUDA[d:s]` without
//! device nodes, copies only as RMA operations).

use std::path::{Path, PathBuf};

use otf2::{
    ArchiveWriter, AttributeValue, CommFlags, GroupFlags, GroupType, LocationGroupType, LocationType, MetricMember,
    MetricMode, MetricOccurrence, Paradigm, ParadigmClass, RecorderKind, Region, RegionRole, RmaWinFlags,
    SystemTreeDomain, Type,
};

/// What [`gpu_pair`] wrote, for the tests to compare with.
pub struct GpuPair {
    pub anchor: PathBuf,
    pub iterations: u64,
    pub peer_bytes: u64,
    pub nccl_bytes: u64,
    pub mpi_bytes: u64,
    /// NVLink counters at the end: (GPU 0 sent, GPU 1 received).
    pub nvlink: (u64, u64),
}

/// What [`gpu_pair`] defines that its events refer to.
struct PairRefs {
    corr: otf2::AttributeRef,
    bytes: otf2::AttributeRef,
    kind: otf2::AttributeRef,
    src: otf2::AttributeRef,
    dst: otf2::AttributeRef,
    masters: Vec<otf2::LocationRef>,
    streams: Vec<otf2::LocationRef>,
    nvlinks: Vec<otf2::LocationRef>,
    send: otf2::RegionRef,
    recv: otf2::RegionRef,
    launch: otf2::RegionRef,
    peer_api: otf2::RegionRef,
    kernel: otf2::RegionRef,
    ptop: otf2::RegionRef,
    nccl_send: otf2::RegionRef,
    nccl_recv: otf2::RegionRef,
    world: otf2::CommRef,
    nccl: otf2::CommRef,
    window: otf2::RmaWinRef,
    sent_metric: otf2::MetricRef,
    received_metric: otf2::MetricRef,
}

/// The definitions of [`gpu_pair`]: one host with two NVLink-connected
/// GPUs, per rank a master thread, a CUDA stream and an NVLink metric
/// location; MPI, CUDA and NCCL communicators, the peer copies' window.
fn define_pair(d: &mut otf2::Definitions) -> PairRefs {
    d.paradigm(Paradigm::Mpi, "MPI", ParadigmClass::Process);
    d.paradigm(Paradigm::Cuda, "CUDA", ParadigmClass::Accelerator);
    let corr = d.attribute("CUDA correlation id", "", Type::U32);
    let bytes = d.attribute("bytes", "", Type::U64);
    let kind = d.attribute("copy kind", "", Type::String);
    let src = d.attribute("source device", "", Type::String);
    let dst = d.attribute("destination device", "", Type::String);
    let machine = d.system_tree_node("machine", "machine", None);
    let host = d.system_tree_node("gpu-host", "node", Some(machine));
    let gpus: Vec<_> = (0..2)
        .map(|g| {
            let n = d.system_tree_node(&format!("CUDA Device {g}"), "GPU", Some(host));
            d.system_tree_node_domain(n, SystemTreeDomain::AcceleratorDevice);
            let product = d.string("NVIDIA H200");
            d.system_tree_node_property(n, "name", AttributeValue::String(product));
            let link = d.string("18 links, NVLink 4, 849960000 kB/s");
            d.system_tree_node_property(n, &format!("NVLink to CUDA Device {}", 1 - g), AttributeValue::String(link));
            n
        })
        .collect();
    let mut masters = Vec::new();
    let mut streams = Vec::new();
    let mut nvlinks = Vec::new();
    for r in 0..2u64 {
        let g = d.location_group(&format!("MPI Rank {r}"), LocationGroupType::Process, host, None);
        let ctx = d.location_group("CUDA Context 1", LocationGroupType::Accelerator, gpus[r as usize], Some(g));
        masters.push(d.location(r << 32, "Master thread", LocationType::CpuThread, g).unwrap());
        let s = d.location(r << 32 | 1 << 20, &format!("CUDA[{r}:7]"), LocationType::AcceleratorStream, ctx);
        streams.push(s.unwrap());
        nvlinks.push(d.location(r << 32 | 1 << 21, &format!("NVLink GPU {r}"), LocationType::Metric, g).unwrap());
    }
    let region = |d: &mut otf2::Definitions, name: &str, desc: &str, role, p| {
        let mut r = Region::new(name, role, p);
        r.description = desc;
        d.region(r)
    };
    let send = region(d, "MPI_Send", "p2p", RegionRole::Point2Point, Paradigm::Mpi);
    let recv = region(d, "MPI_Recv", "p2p", RegionRole::Point2Point, Paradigm::Mpi);
    let launch = region(d, "cudaLaunchKernel", "CUDA runtime", RegionRole::Wrapper, Paradigm::Cuda);
    let peer_api = region(d, "cudaMemcpyPeerAsync", "CUDA runtime", RegionRole::Wrapper, Paradigm::Cuda);
    let kernel = region(d, "void compute<float>(float*, int)", "CUDA kernel", RegionRole::Function, Paradigm::Cuda);
    let ptop = region(d, "[CUDA memcpy PtoP]", "CUDA", RegionRole::DataTransfer, Paradigm::Cuda);
    let nccl_send = region(d, "ncclSend", "NCCL", RegionRole::Point2Point, Paradigm::Cuda);
    let nccl_recv = region(d, "ncclRecv", "NCCL", RegionRole::Point2Point, Paradigm::Cuda);
    let ids = |l: &[otf2::LocationRef]| l.iter().map(|x| x.id()).collect::<Vec<_>>();
    d.group("MPI_COMM_WORLD locations", GroupType::CommLocations, Paradigm::Mpi, GroupFlags::NONE, &ids(&masters));
    let wg = d.group("", GroupType::CommGroup, Paradigm::Mpi, GroupFlags::NONE, &[0, 1]);
    let world = d.comm("MPI_COMM_WORLD", wg, None, CommFlags::NONE);
    let cuda_members = [masters[0].id(), streams[0].id(), masters[1].id(), streams[1].id()];
    d.group("CUDA locations", GroupType::CommLocations, Paradigm::Cuda, GroupFlags::NONE, &cuda_members);
    let cg = d.group("CUDA", GroupType::CommGroup, Paradigm::Cuda, GroupFlags::NONE, &[0, 1, 2, 3]);
    let cuda = d.comm("CUDA", cg, None, CommFlags::NONE);
    let ng = d.group("", GroupType::CommGroup, Paradigm::Cuda, GroupFlags::NONE, &[0, 2]);
    let nccl = d.comm("NCCL comm 1", ng, Some(cuda), CommFlags::NONE);
    let window = d.rma_win("CUDA Context 1 of rank 0", cuda, RmaWinFlags::NONE);
    let mut metric = |name: &str| {
        let m = d.metric_member(MetricMember::new(name, "bytes", MetricMode::AccumulatedStart, Type::U64));
        d.metric_class(&[m], MetricOccurrence::Asynchronous, RecorderKind::Abstract).unwrap()
    };
    let (sent_metric, received_metric) = (metric("NVLink sent"), metric("NVLink received"));
    PairRefs {
        corr,
        bytes,
        kind,
        src,
        dst,
        masters,
        streams,
        nvlinks,
        send,
        recv,
        launch,
        peer_api,
        kernel,
        ptop,
        nccl_send,
        nccl_recv,
        world,
        nccl,
        window,
        sent_metric,
        received_metric,
    }
}

/// The bytes [`gpu_pair`] moves per iteration: (peer copy, NCCL, MPI).
type PairBytes = (u64, u64, u64);

/// Rank `r`'s host thread: a launch at t, the peer copy and NCCL send
/// (rank 0) or receive (rank 1), the MPI message.
fn write_pair_host(a: &mut ArchiveWriter, p: &PairRefs, r: u64, iterations: u64, sizes: PairBytes) {
    let (corr, launch, peer_api, world, nccl) = (p.corr, p.launch, p.peer_api, p.world, p.nccl);
    let (_, nccl_bytes, mpi_bytes) = sizes;
    let step = 1_000_000u64;
    let mut w = a.event_writer(p.masters[r as usize]).unwrap();
    for i in 0..iterations {
        let t = 1_000 + i * step;
        let c = (i * 2 + 1) as u32;
        w.attributes(&[(corr, AttributeValue::U32(c))]).unwrap().enter(t, launch).unwrap();
        w.leave(t + 5_000, launch).unwrap();
        if r == 0 {
            w.attributes(&[(corr, AttributeValue::U32(c + 1))]).unwrap().enter(t + 10_000, peer_api).unwrap();
            w.leave(t + 15_000, peer_api).unwrap();
            w.enter(t + 20_000, p.nccl_send).unwrap();
            w.mpi_send(t + 21_000, 1, nccl, 0, nccl_bytes).unwrap();
            w.leave(t + 30_000, p.nccl_send).unwrap();
            w.enter(t + 40_000, p.send).unwrap();
            w.mpi_send(t + 41_000, 1, world, 7, mpi_bytes).unwrap();
            w.leave(t + 50_000, p.send).unwrap();
        } else {
            w.enter(t + 20_000, p.nccl_recv).unwrap();
            w.mpi_recv(t + 35_000, 0, nccl, 0, nccl_bytes).unwrap();
            w.leave(t + 36_000, p.nccl_recv).unwrap();
            w.enter(t + 40_000, p.recv).unwrap();
            w.mpi_recv(t + 55_000, 0, world, 7, mpi_bytes).unwrap();
            w.leave(t + 56_000, p.recv).unwrap();
        }
    }
    w.close().unwrap();
}

/// Rank `r`'s stream: the kernel, and rank 0's peer copy to GPU 1.
fn write_pair_stream(a: &mut ArchiveWriter, p: &PairRefs, r: u64, iterations: u64, peer_bytes: u64) {
    let (corr, bytes, kind, src, dst, kernel, ptop, window) =
        (p.corr, p.bytes, p.kind, p.src, p.dst, p.kernel, p.ptop, p.window);
    let dev = |w: &mut otf2::EventWriter<'_>, s: &str| AttributeValue::String(w.defs().string(s));
    let step = 1_000_000u64;
    let mut w = a.event_writer(p.streams[r as usize]).unwrap();
    for i in 0..iterations {
        let t = 1_000 + i * step;
        let c = (i * 2 + 1) as u32;
        w.attributes(&[(corr, AttributeValue::U32(c))]).unwrap().enter(t + 100_000, kernel).unwrap();
        w.leave(t + 300_000, kernel).unwrap();
        if r == 0 {
            let (k, s, dd) = (dev(&mut w, "PtoP"), dev(&mut w, "CUDA Device 0"), dev(&mut w, "CUDA Device 1"));
            let attrs = [(corr, AttributeValue::U32(c + 1)), (bytes, AttributeValue::U64(peer_bytes)), (kind, k)];
            let attrs = [attrs[0], attrs[1], attrs[2], (src, s), (dst, dd)];
            w.attributes(&attrs).unwrap().enter(t + 400_000, ptop).unwrap();
            w.rma_put(t + 400_000, window, 3, peer_bytes, i).unwrap();
            w.rma_op_complete_blocking(t + 450_000, window, i).unwrap();
            w.leave(t + 450_000, ptop).unwrap();
        }
    }
    w.close().unwrap();
}

/// Rank `r`'s NVLink counters, sampled at the end of each iteration:
/// `per_iteration` more bytes sent (rank 0) or received (rank 1) each.
fn write_pair_nvlink(a: &mut ArchiveWriter, p: &PairRefs, r: u64, iterations: u64, per_iteration: u64) {
    let step = 1_000_000u64;
    let mut w = a.event_writer(p.nvlinks[r as usize]).unwrap();
    for i in 0..iterations {
        let t = 900_000 + i * step;
        let moved = (i + 1) * per_iteration;
        let (s, rcv) = if r == 0 { (moved, 0) } else { (0, moved) };
        w.metric(t, p.sent_metric, &[s.into()]).unwrap();
        w.metric(t, p.received_metric, &[rcv.into()]).unwrap();
    }
    w.close().unwrap();
}

/// Two ranks, rank r on `CUDA Device r`; per iteration each rank launches
/// one kernel, rank 0 copies `peer_bytes` to GPU 1 (a PtoP copy with its
/// RMA put), sends `nccl_bytes` to rank 1 through NCCL and `mpi_bytes`
/// through MPI; NVLink metrics on both ranks.
pub fn gpu_pair(dir: &Path, iterations: u64) -> GpuPair {
    let (peer_bytes, nccl_bytes, mpi_bytes) = (8 << 20, 1 << 20, 1000);
    let mut a = ArchiveWriter::create(dir, "traces").unwrap();
    let p = define_pair(a.defs());
    for r in 0..2u64 {
        write_pair_host(&mut a, &p, r, iterations, (peer_bytes, nccl_bytes, mpi_bytes));
        write_pair_stream(&mut a, &p, r, iterations, peer_bytes);
        write_pair_nvlink(&mut a, &p, r, iterations, peer_bytes + nccl_bytes);
    }
    let anchor = a.anchor_path().to_owned();
    a.close().unwrap();
    let moved = iterations * (peer_bytes + nccl_bytes);
    GpuPair { anchor, iterations, peer_bytes, nccl_bytes, mpi_bytes, nvlink: (moved, moved) }
}

/// A trace named as Score-P names things: 2 MPI ranks, each with a CUDA
/// stream `CUDA[0:13]` in its own accelerator location group (no device
/// node, no creator), kernels by demangled name, API calls with role
/// FUNCTION, and device-to-host copies only as an RMA put to the master
/// thread. Per rank: `iterations` × (cudaLaunchKernel and a kernel,
/// cudaMemcpy and one 4096-byte copy, MPI_Send or MPI_Recv of 64 bytes),
/// each in a user region `iteration` (50 µs) holding a compiler region
/// `daxpy_` (400 ns); MPI_Init (8 µs) before them and MPI_Finalize (5 µs)
/// after.
pub fn scorep_style(dir: &Path, iterations: u64) -> PathBuf {
    let mut a = ArchiveWriter::create(dir, "traces").unwrap();
    let d = a.defs();
    d.paradigm(Paradigm::Mpi, "MPI", ParadigmClass::Process);
    d.paradigm(Paradigm::Cuda, "CUDA", ParadigmClass::Accelerator);
    let machine = d.system_tree_node("Linux", "machine", None);
    let host = d.system_tree_node("node01", "node", Some(machine));
    let mut masters = Vec::new();
    let mut streams = Vec::new();
    for r in 0..2u64 {
        let g = d.location_group(&format!("MPI Rank {r}"), LocationGroupType::Process, host, None);
        let gpu = d.location_group(&format!("CUDA[{r}]"), LocationGroupType::Accelerator, host, None);
        masters.push(d.location(r << 32, "Master thread", LocationType::CpuThread, g).unwrap());
        streams.push(d.location(r << 32 | 1, "CUDA[0:13]", LocationType::AcceleratorStream, gpu).unwrap());
    }
    let send = d.region(Region::new("MPI_Send", RegionRole::Point2Point, Paradigm::Mpi));
    let recv = d.region(Region::new("MPI_Recv", RegionRole::Point2Point, Paradigm::Mpi));
    let launch = d.region(Region::new("cudaLaunchKernel", RegionRole::Function, Paradigm::Cuda));
    let memcpy = d.region(Region::new("cudaMemcpy", RegionRole::Function, Paradigm::Cuda));
    let kernel =
        d.region(Region::new("saxpy_kernel(int, float, float*, float*)", RegionRole::Function, Paradigm::Cuda));
    let init = d.region(Region::new("MPI_Init", RegionRole::Function, Paradigm::Mpi));
    let finalize = d.region(Region::new("MPI_Finalize", RegionRole::Function, Paradigm::Mpi));
    let iteration = d.region(Region::new("iteration", RegionRole::Function, Paradigm::User));
    let daxpy = d.region(Region::new("daxpy_", RegionRole::Function, Paradigm::Compiler));
    let ids: Vec<u64> = masters.iter().map(|m| m.id()).collect();
    d.group("", GroupType::CommLocations, Paradigm::Mpi, GroupFlags::NONE, &ids);
    let wg = d.group("", GroupType::CommGroup, Paradigm::Mpi, GroupFlags::NONE, &[0, 1]);
    let world = d.comm("MPI_COMM_WORLD", wg, None, CommFlags::NONE);
    let cuda_ids = [masters[0].id(), masters[1].id(), streams[0].id(), streams[1].id()];
    d.group("", GroupType::CommLocations, Paradigm::Cuda, GroupFlags::NONE, &cuda_ids);
    let cg = d.group("", GroupType::CommGroup, Paradigm::Cuda, GroupFlags::NONE, &[0, 1, 2, 3]);
    let cuda = d.comm("CUDA_WINDOW", cg, None, CommFlags::NONE);
    let window = d.rma_win("CUDA_WINDOW", cuda, RmaWinFlags::NONE);
    for r in 0..2u64 {
        let mut w = a.event_writer(masters[r as usize]).unwrap();
        w.enter(1_000, init).unwrap();
        w.leave(9_000, init).unwrap();
        for i in 0..iterations {
            let t = 10_000 + i * 100_000;
            w.enter(t, iteration).unwrap();
            w.enter(t, launch).unwrap();
            w.leave(t + 1_000, launch).unwrap();
            w.enter(t + 1_500, daxpy).unwrap();
            w.leave(t + 1_900, daxpy).unwrap();
            w.enter(t + 2_000, memcpy).unwrap();
            w.leave(t + 30_000, memcpy).unwrap();
            if r == 0 {
                w.enter(t + 40_000, send).unwrap();
                w.mpi_send(t + 40_100, 1, world, 3, 64).unwrap();
                w.leave(t + 41_000, send).unwrap();
            } else {
                w.enter(t + 40_000, recv).unwrap();
                w.mpi_recv(t + 42_000, 0, world, 3, 64).unwrap();
                w.leave(t + 42_100, recv).unwrap();
            }
            w.leave(t + 50_000, iteration).unwrap();
        }
        let end = 10_000 + iterations * 100_000;
        w.enter(end, finalize).unwrap();
        w.leave(end + 5_000, finalize).unwrap();
        w.close().unwrap();
        let mut w = a.event_writer(streams[r as usize]).unwrap();
        for i in 0..iterations {
            let t = 10_000 + i * 100_000;
            w.enter(t + 3_000, kernel).unwrap();
            w.leave(t + 13_000, kernel).unwrap();
            // The copy: a put to the host (CUDA comm rank r = its master).
            w.rma_put(t + 14_000, window, r as u32, 4096, i).unwrap();
            w.rma_op_complete_blocking(t + 16_000, window, i).unwrap();
        }
        w.close().unwrap();
    }
    let anchor = a.anchor_path().to_owned();
    a.close().unwrap();
    anchor
}

/// A name with what JSON and CSV must escape or carry: quotes, a
/// backslash, a comma, control characters, DEL and non-ASCII.
pub const ODD_NAME: &str = "say \"hi\", C:\\dir\\ tab\there\nnew line \u{1}\u{1f}\u{7f} é 漢字 😀";

/// One rank whose thread, stream, region, kernel, attribute and its value
/// are all named [`ODD_NAME`] (with a suffix saying which): the host
/// enters the region `n` times, the stream runs the kernel `n` times.
pub fn odd_names(dir: &Path, n: u64) -> PathBuf {
    let odd = |what: &str| format!("{ODD_NAME} {what}");
    let mut a = ArchiveWriter::create(dir, "traces").unwrap();
    let d = a.defs();
    d.paradigm(Paradigm::Cuda, "CUDA", ParadigmClass::Accelerator);
    let attr = d.attribute(&odd("attribute"), "", Type::String);
    let machine = d.system_tree_node("machine", "machine", None);
    let host = d.system_tree_node(&odd("host"), "node", Some(machine));
    let g = d.location_group("MPI Rank 0", LocationGroupType::Process, host, None);
    let ctx = d.location_group("CUDA Context 1", LocationGroupType::Accelerator, host, Some(g));
    let thread = d.location(0, &odd("thread"), LocationType::CpuThread, g).unwrap();
    let stream = d.location(1 << 20, "CUDA[0:7]", LocationType::AcceleratorStream, ctx).unwrap();
    let region = d.region(Region::new(&odd("region"), RegionRole::Function, Paradigm::User));
    let kernel_name = odd("kernel");
    let mut k = Region::new(&kernel_name, RegionRole::Function, Paradigm::Cuda);
    k.description = "CUDA kernel";
    let kernel = d.region(k);
    let mut w = a.event_writer(thread).unwrap();
    for i in 0..n {
        w.enter(1_000 + i * 10_000, region).unwrap();
        w.leave(2_000 + i * 10_000, region).unwrap();
    }
    w.close().unwrap();
    let mut w = a.event_writer(stream).unwrap();
    for i in 0..n {
        let value = AttributeValue::String(w.defs().string(&odd("value")));
        w.attributes(&[(attr, value)]).unwrap().enter(3_000 + i * 10_000, kernel).unwrap();
        w.leave(4_000 + i * 10_000, kernel).unwrap();
    }
    w.close().unwrap();
    let anchor = a.anchor_path().to_owned();
    a.close().unwrap();
    anchor
}
