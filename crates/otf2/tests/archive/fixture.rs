//! The sample archive every check reads: 2 MPI ranks × 2 threads, with
//! regions, a send/recv pair, an allreduce, an RMA put to the peer rank, a
//! metric, attributes on an enter, and clock offsets on rank 1.
//!
//! Each location's events are data ([`Ev`]), so the expected counts that
//! the otf2-print, Python and read-back checks compare against come from
//! the same list that was written.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use otf2::*;

/// A directory under the system temp dir, removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!("otf2-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).unwrap();
        Self(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// One event of the sample, named as OTF2's Python bindings name it.
#[derive(Clone, Debug)]
pub enum Ev {
    Enter(u64, RegionRef),
    EnterWithAttributes(u64, RegionRef),
    Leave(u64, RegionRef),
    MpiSend(u64, u32, u32, u64),
    MpiRecv(u64, u32, u32, u64),
    MpiCollectiveBegin(u64),
    MpiCollectiveEnd(u64, Collective),
    RmaWinCreate(u64),
    RmaWinDestroy(u64),
    RmaPut(u64, u32, u64, u64),
    RmaOpCompleteBlocking(u64, u64),
    Metric(u64, Vec<MetricValue>),
}

impl Ev {
    pub fn kind(&self) -> &'static str {
        match self {
            Ev::Enter(..) | Ev::EnterWithAttributes(..) => "Enter",
            Ev::Leave(..) => "Leave",
            Ev::MpiSend(..) => "MpiSend",
            Ev::MpiRecv(..) => "MpiRecv",
            Ev::MpiCollectiveBegin(..) => "MpiCollectiveBegin",
            Ev::MpiCollectiveEnd(..) => "MpiCollectiveEnd",
            Ev::RmaWinCreate(..) => "RmaWinCreate",
            Ev::RmaWinDestroy(..) => "RmaWinDestroy",
            Ev::RmaPut(..) => "RmaPut",
            Ev::RmaOpCompleteBlocking(..) => "RmaOpCompleteBlocking",
            Ev::Metric(..) => "Metric",
        }
    }
}

pub const TAG: u32 = 42;
pub const MESSAGE_BYTES: u64 = 1024;
pub const PUT_BYTES: u64 = 4096;
pub const GRID: u32 = 128;
pub const KERNEL_NAME: &str = "saxpy_kernel";
/// Rank 1's clock runs this far behind; its two clock offsets say so.
pub const RANK1_OFFSET: i64 = 5;

/// Location id of `thread` of `rank`, Score-P style.
pub fn location_id(rank: u64, thread: u64) -> u64 {
    rank << 32 | thread
}

pub struct Sample {
    pub anchor: PathBuf,
    /// Events per location id, as written (local timestamps).
    pub events: BTreeMap<u64, Vec<Ev>>,
    pub comm: CommRef,
    pub win: RmaWinRef,
    pub metric: MetricRef,
    pub grid: AttributeRef,
    pub kernel_name: AttributeRef,
    pub allreduce: Collective,
}

impl Sample {
    /// Expected number of events per (location id, kind).
    pub fn counts(&self) -> BTreeMap<(u64, String), usize> {
        let mut counts = BTreeMap::new();
        for (&location, events) in &self.events {
            for ev in events {
                *counts.entry((location, ev.kind().to_owned())).or_default() += 1;
            }
        }
        counts
    }
}

/// What the sample defines that its events and checks refer to.
struct SampleDefs {
    grid: AttributeRef,
    kernel_name: AttributeRef,
    masters: Vec<LocationRef>,
    main: RegionRef,
    worker: RegionRef,
    send: RegionRef,
    recv: RegionRef,
    allreduce_region: RegionRef,
    put_region: RegionRef,
    comm: CommRef,
    win: RmaWinRef,
    metric: MetricRef,
    allreduce: Collective,
}

/// The sample's definitions: the paradigm and attributes, one node with
/// two ranks of two threads, the regions, MPI_COMM_WORLD and its window,
/// and a metric of two members on rank 0's master thread.
fn define(defs: &mut Definitions) -> Result<SampleDefs> {
    defs.paradigm(Paradigm::Mpi, "MPI", ParadigmClass::Process);
    let grid = defs.attribute("grid", "CUDA grid size", Type::U32);
    let kernel_name = defs.attribute("kernel", "kernel name", Type::String);

    let machine = defs.system_tree_node("machine", "machine", None);
    let node = defs.system_tree_node("node0", "node", Some(machine));
    let hostname = defs.string("node0.example");
    defs.system_tree_node_property(node, "hostname", AttributeValue::String(hostname));
    defs.system_tree_node_domain(node, SystemTreeDomain::SharedMemory);

    let mut masters = Vec::new();
    let mut locations = Vec::new();
    for rank in 0..2 {
        let group = defs.location_group(&format!("MPI Rank {rank}"), LocationGroupType::Process, node, None);
        defs.location_group_property(group, "rank", AttributeValue::U64(rank));
        for thread in 0..2 {
            let name = if thread == 0 { "Master thread".to_owned() } else { format!("Pthread {thread}") };
            let location = defs.location(location_id(rank, thread), &name, LocationType::CpuThread, group)?;
            if thread == 0 {
                masters.push(location);
            }
            locations.push(location);
        }
    }
    defs.location_property(masters[0], "cpu", AttributeValue::I32(3));

    let main = defs.region(Region::new("main", RegionRole::Function, Paradigm::User));
    let worker = defs.region(Region {
        source_file: "worker.c",
        begin_line: 10,
        end_line: 20,
        ..Region::new("worker", RegionRole::Function, Paradigm::Pthread)
    });
    let send = defs.region(Region::new("MPI_Send", RegionRole::Point2Point, Paradigm::Mpi));
    let recv = defs.region(Region::new("MPI_Recv", RegionRole::Point2Point, Paradigm::Mpi));
    let allreduce_region = defs.region(Region::new("MPI_Allreduce", RegionRole::CollAll2All, Paradigm::Mpi));
    let put_region = defs.region(Region::new("MPI_Put", RegionRole::Rma, Paradigm::Mpi));

    let master_ids: Vec<u64> = masters.iter().map(|l| l.id()).collect();
    defs.group("", GroupType::CommLocations, Paradigm::Mpi, GroupFlags::NONE, &master_ids);
    let world_group = defs.group("", GroupType::CommGroup, Paradigm::Mpi, GroupFlags::NONE, &[0, 1]);
    let comm = defs.comm("MPI_COMM_WORLD", world_group, None, CommFlags::NONE);
    let win = defs.rma_win("MPI_Win", comm, RmaWinFlags::NONE);

    let tx = defs.metric_member(MetricMember::new("nvlink_tx", "bytes", MetricMode::AccumulatedStart, Type::U64));
    let temperature = defs.metric_member(MetricMember {
        description: "GPU temperature",
        ..MetricMember::new("temperature", "C", MetricMode::AbsolutePoint, Type::F64)
    });
    let class = defs.metric_class(&[tx, temperature], MetricOccurrence::Asynchronous, RecorderKind::Abstract)?;
    let metric = defs.metric_instance(class, masters[0], MetricScope::SystemTreeNode(node));

    let allreduce = Collective { op: CollectiveOp::Allreduce, comm, root: None, bytes_sent: 8, bytes_received: 8 };
    Ok(SampleDefs {
        grid,
        kernel_name,
        masters,
        main,
        worker,
        send,
        recv,
        allreduce_region,
        put_region,
        comm,
        win,
        metric,
        allreduce,
    })
}

/// The events of each location, by location id.
fn sample_events(d: &SampleDefs) -> BTreeMap<u64, Vec<Ev>> {
    let SampleDefs { main, worker, send, recv, allreduce_region, put_region, allreduce, .. } = *d;
    let mut events = BTreeMap::new();
    events.insert(
        location_id(0, 0),
        vec![
            Ev::EnterWithAttributes(10, main),
            Ev::Enter(20, send),
            Ev::MpiSend(21, 1, TAG, MESSAGE_BYTES),
            Ev::Leave(30, send),
            Ev::Enter(40, allreduce_region),
            Ev::MpiCollectiveBegin(41),
            Ev::MpiCollectiveEnd(49, allreduce),
            Ev::Leave(50, allreduce_region),
            Ev::RmaWinCreate(55),
            Ev::Enter(58, put_region),
            Ev::RmaPut(60, 1, PUT_BYTES, 7),
            Ev::RmaOpCompleteBlocking(65, 7),
            Ev::Leave(66, put_region),
            Ev::Metric(70, vec![MetricValue::U64(PUT_BYTES), MetricValue::F64(42.5)]),
            Ev::RmaWinDestroy(75),
            Ev::Leave(100, main),
        ],
    );
    events.insert(
        location_id(0, 1),
        vec![Ev::Enter(12, worker), Ev::Leave(18, worker), Ev::Enter(22, worker), Ev::Leave(28, worker)],
    );
    events.insert(
        location_id(1, 0),
        vec![
            Ev::Enter(10, main),
            Ev::Enter(15, recv),
            Ev::MpiRecv(25, 0, TAG, MESSAGE_BYTES),
            Ev::Leave(26, recv),
            Ev::Enter(40, allreduce_region),
            Ev::MpiCollectiveBegin(42),
            Ev::MpiCollectiveEnd(48, allreduce),
            Ev::Leave(50, allreduce_region),
            Ev::RmaWinCreate(55),
            Ev::RmaWinDestroy(75),
            Ev::Leave(100, main),
        ],
    );
    // Rank 1's second thread records nothing: its event file must exist
    // anyway, empty.
    events.insert(location_id(1, 1), Vec::new());
    events
}

/// Writes the events of `id`, checking the count its writer reports.
fn write_location(archive: &mut ArchiveWriter, d: &SampleDefs, id: u64, events: &[Ev]) -> Result<()> {
    let SampleDefs { grid, kernel_name, comm, win, metric, .. } = *d;
    let mut writer = archive.event_writer(LocationRef::from_id(id))?;
    for ev in events {
        match ev.clone() {
            Ev::Enter(t, r) => writer.enter(t, r)?,
            Ev::EnterWithAttributes(t, r) => {
                let name = writer.defs().string(KERNEL_NAME);
                writer
                    .attributes(&[(grid, AttributeValue::U32(GRID)), (kernel_name, AttributeValue::String(name))])?
                    .enter(t, r)?
            }
            Ev::Leave(t, r) => writer.leave(t, r)?,
            Ev::MpiSend(t, peer, tag, len) => writer.mpi_send(t, peer, comm, tag, len)?,
            Ev::MpiRecv(t, peer, tag, len) => writer.mpi_recv(t, peer, comm, tag, len)?,
            Ev::MpiCollectiveBegin(t) => writer.mpi_collective_begin(t)?,
            Ev::MpiCollectiveEnd(t, c) => writer.mpi_collective_end(t, &c)?,
            Ev::RmaWinCreate(t) => writer.rma_win_create(t, win)?,
            Ev::RmaWinDestroy(t) => writer.rma_win_destroy(t, win)?,
            Ev::RmaPut(t, remote, bytes, id) => writer.rma_put(t, win, remote, bytes, id)?,
            Ev::RmaOpCompleteBlocking(t, id) => writer.rma_op_complete_blocking(t, win, id)?,
            Ev::Metric(t, values) => writer.metric(t, metric, &values)?,
        }
    }
    assert_eq!(writer.close()?, events.len() as u64);
    Ok(())
}

pub fn write_sample(dir: &Path) -> Result<Sample> {
    let mut archive = ArchiveWriter::create(dir, "traces")?;
    archive.set_description("otf2 integration test")?;
    archive.set_clock_properties(1_000_000_000, 0, 1_000, Some(1_700_000_000_000_000_000));
    let d = define(archive.defs())?;
    let events = sample_events(&d);

    archive.clock_offset(d.masters[1], 0, RANK1_OFFSET, 0.5)?;
    archive.clock_offset(d.masters[1], 1_000, RANK1_OFFSET, 0.5)?;

    // Written in an order other than definition order, as a merge might.
    for &id in [location_id(1, 0), location_id(0, 1), location_id(0, 0)].iter() {
        write_location(&mut archive, &d, id, &events[&id])?;
    }
    let anchor = archive.anchor_path().to_owned();
    archive.close()?;
    let SampleDefs { comm, win, metric, grid, kernel_name, allreduce, .. } = d;
    Ok(Sample { anchor, events, comm, win, metric, grid, kernel_name, allreduce })
}
