//! Round trips of every definition.

use super::*;
use crate::varint::Cursor;

#[test]
fn definitions_round_trip() {
    let defs = vec![
        Definition::String { id: 1, value: "MPI_Send".into() },
        Definition::Region {
            id: 2,
            name: 1,
            canonical: 0,
            paradigm: Paradigm::Mpi,
            role: RegionRole::Point2Point,
            group: 0,
        },
        Definition::Location { id: 0, kind: LocationKind::HostThread { tid: 42, is_main: true }, name: 1 },
        Definition::MpiRank { rank: 3, size: 4 },
        Definition::Comm(CommDef {
            id: 1,
            key: (2, 7),
            name: "MPI_COMM_WORLD".into(),
            members: vec![(0, 4)],
            parent: Some(0),
        }),
        Definition::ClockSync { local: 100, offset: -5, error: 2 },
        Definition::Dropped { location: 0, count: 9 },
        Definition::Expired { location: 3, events: 1 << 40, until: 987_654_321 },
        Definition::Module(Module {
            start: 0x5555_0000_1000,
            end: 0x5555_0000_9000,
            bias: 0x5555_0000_0000,
            path: "/usr/bin/cg.x".into(),
            build_id: vec![0xab; 20],
        }),
        Definition::Frame { id: 7, parent: 3, address: 0x7fff_1234_5678 },
        Definition::PyCode { id: 1, name: "Model.forward".into(), file: "/srv/train.py".into(), line: 42 },
        Definition::PyFrame { id: 8, parent: 7, code: 1, line: 57 },
        Definition::SamplingPeriod { ns: 1_000_000 },
        Definition::SourceLost { what: SourceLoss::CuptiDropped, count: 1234 },
        Definition::SourceLost { what: SourceLoss::NcclThreadExit, count: 0 },
        Definition::SourceLost { what: SourceLoss::Other(99), count: u64::MAX },
        Definition::StreamEnd { time: 1234, exit_started: 1200 },
        Definition::Signal { signal: 15, time: 1300 },
        Definition::Untraced { reason: "CUPTI could not be loaded: no libcupti.so".into() },
        Definition::Timer(gputrace_clock::Timer::ClockGettime),
        Definition::Timer(gputrace_clock::Timer::Tsc { hz: 2_445_406_000, source: gputrace_clock::MapSource::Command }),
        Definition::Timer(gputrace_clock::Timer::Tsc { hz: 3_000_000_000, source: gputrace_clock::MapSource::Process }),
        Definition::Timer(gputrace_clock::Timer::Tsc {
            hz: 2_400_000_123,
            source: gputrace_clock::MapSource::HostFile,
        }),
        Definition::CommName { id: 1, name: "halo rows".into() },
        Definition::ThreadName { tid: 4243, name: "data loader".into() },
        Definition::CudaName { kind: CudaObject::Stream, handle: 0x7f00_1234_5600, name: "copies".into() },
        Definition::CudaName { kind: CudaObject::Device, handle: 1, name: "second GPU".into() },
        Definition::CudaHandle { kind: CudaObject::Stream, handle: 0x7f00_1234_5600, context: 1, stream: 13 },
        Definition::CudaHandle { kind: CudaObject::Context, handle: 0x55aa_0000, context: 1, stream: 0 },
        Definition::Region { id: 3, name: 1, canonical: 0, paradigm: Paradigm::Nvtx, role: RegionRole::Code, group: 1 },
        Definition::Location { id: 3, kind: LocationKind::GpuStream { device: 1, context: 2, stream: 13 }, name: 0 },
        Definition::Location { id: 4, kind: LocationKind::DeviceMetrics { device: 1 }, name: 0 },
        Definition::Location { id: 5, kind: LocationKind::Lane { id: 9, gpu: true }, name: 0 },
        Definition::Device(DeviceDef {
            id: 1,
            name: "NVIDIA H200".into(),
            uuid: [7; 16],
            multiprocessors: 132,
            memory: 141 << 30,
            compute_capability: (9, 0),
        }),
        Definition::Context { id: 2, device: 1 },
        Definition::NcclComm { id: 4, comm_hash: 0xfeed_beef, nranks: 2, rank: 1, name: "world".into() },
        Definition::NvLink(NvLinkDef {
            ends: [LinkEnd::Gpu([1; 16]), LinkEnd::Other(3)],
            version: 4,
            links: 18,
            bandwidth: 849_960_000,
            flags: 2,
            nvswitch: false,
        }),
        Definition::Metric(MetricDef {
            id: 1,
            name: "NVLink TX".into(),
            unit: "bytes".into(),
            description: "bytes sent".into(),
            device: 1,
            cumulative: true,
        }),
    ];
    round_trip(&defs);
}

fn round_trip(defs: &[Definition]) {
    let mut buf = Vec::new();
    for d in defs {
        d.encode(&mut buf);
    }
    let mut c = Cursor::new(&buf);
    for d in defs {
        assert_eq!(&Definition::decode(&mut c).unwrap(), d);
    }
    assert!(c.is_empty());
}

#[test]
fn graph_definitions_round_trip() {
    round_trip(&[
        Definition::GraphNode { node: 0x1_0000_0042, original: 0, thread: 4711, time: 99 },
        Definition::GraphNode { node: 0x1_0000_0043, original: 0x1_0000_0042, thread: 4712, time: 100 },
        Definition::GraphCaptured {
            call: 0x5555_0000_1230,
            thread: 4711,
            start: 90,
            end: 101,
            op: CapturedOp::Send(crate::Message { peer: 1, comm: 2, tag: 0, bytes: 262_144 }),
        },
        Definition::GraphCaptured {
            call: 0x5555_0000_1240,
            thread: 4711,
            start: 91,
            end: 101,
            op: CapturedOp::Recv(crate::Message { peer: 3, comm: 2, tag: 0, bytes: 262_144 }),
        },
        Definition::GraphCaptured {
            call: 0x5555_0000_1250,
            thread: 4711,
            start: 92,
            end: 102,
            op: CapturedOp::Collective(crate::Collective {
                op: crate::CollectiveOp::Allreduce,
                comm: 2,
                root: None,
                sent: 1024,
                received: 1024,
            }),
        },
        Definition::GraphLaunchReported { call: 0x5555_0000_1250 },
    ]);
}

#[test]
fn header_round_trips() {
    let h = StreamHeader {
        producer: Producer::Mpi,
        host: "node1".into(),
        pid: 77,
        process_start: 12345,
        clock_domain: 99,
        monotonic_ns: 1,
        realtime_ns: 2,
        rank_hint: Some(0),
        command: vec!["./app".into(), "-x".into()],
    };
    let mut buf = Vec::new();
    h.encode(&mut buf);
    assert_eq!(StreamHeader::decode(&buf).unwrap(), h);
}

#[test]
fn runs_compress_and_expand() {
    let ranks = [0, 1, 2, 3, 8, 9, 5];
    let runs = rank_runs(ranks);
    assert_eq!(runs, vec![(0, 4), (8, 2), (5, 1)]);
    assert_eq!(expand_runs(&runs).collect::<Vec<_>>(), ranks);
}
