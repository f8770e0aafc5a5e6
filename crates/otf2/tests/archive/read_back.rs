//! The sample read back with this crate's own reader.

use std::collections::BTreeMap;

use otf2::reader::{EventContext, EventVisitor, MetricDef, TraceReader};
use otf2::*;

use crate::fixture::{self, Ev, TempDir};

/// Remembers everything it is shown.
#[derive(Default)]
struct Collect {
    counts: BTreeMap<(u64, String), usize>,
    times: BTreeMap<u64, Vec<u64>>,
    sends: Vec<(u64, u32, CommRef, u32, u64)>,
    recvs: Vec<(u64, u32, CommRef, u32, u64)>,
    puts: Vec<(u64, RmaWinRef, u32, u64, u64)>,
    completions: Vec<(u64, RmaWinRef, u64)>,
    collectives: Vec<(u64, Collective)>,
    metrics: Vec<(u64, MetricRef, Vec<MetricValue>)>,
    attributes: Vec<(u64, Vec<(AttributeRef, AttributeValue)>)>,
}

impl Collect {
    fn note(&mut self, ev: &EventContext<'_>, kind: &str) {
        let location = ev.location.id();
        *self.counts.entry((location, kind.to_owned())).or_default() += 1;
        self.times.entry(location).or_default().push(ev.time);
        if !ev.attributes.is_empty() {
            self.attributes.push((location, ev.attributes.iter().collect()));
        }
    }
}

impl EventVisitor for Collect {
    fn enter(&mut self, ev: &EventContext<'_>, _region: RegionRef) {
        self.note(ev, "Enter");
    }
    fn leave(&mut self, ev: &EventContext<'_>, _region: RegionRef) {
        self.note(ev, "Leave");
    }
    fn mpi_send(&mut self, ev: &EventContext<'_>, receiver: u32, comm: CommRef, tag: u32, length: u64) {
        self.note(ev, "MpiSend");
        self.sends.push((ev.location.id(), receiver, comm, tag, length));
    }
    fn mpi_recv(&mut self, ev: &EventContext<'_>, sender: u32, comm: CommRef, tag: u32, length: u64) {
        self.note(ev, "MpiRecv");
        self.recvs.push((ev.location.id(), sender, comm, tag, length));
    }
    fn mpi_collective_begin(&mut self, ev: &EventContext<'_>) {
        self.note(ev, "MpiCollectiveBegin");
    }
    fn mpi_collective_end(&mut self, ev: &EventContext<'_>, collective: &Collective) {
        self.note(ev, "MpiCollectiveEnd");
        self.collectives.push((ev.location.id(), *collective));
    }
    fn rma_win_create(&mut self, ev: &EventContext<'_>, _win: RmaWinRef) {
        self.note(ev, "RmaWinCreate");
    }
    fn rma_win_destroy(&mut self, ev: &EventContext<'_>, _win: RmaWinRef) {
        self.note(ev, "RmaWinDestroy");
    }
    fn rma_put(&mut self, ev: &EventContext<'_>, win: RmaWinRef, remote: u32, bytes: u64, matching_id: u64) {
        self.note(ev, "RmaPut");
        self.puts.push((ev.location.id(), win, remote, bytes, matching_id));
    }
    fn rma_op_complete_blocking(&mut self, ev: &EventContext<'_>, win: RmaWinRef, matching_id: u64) {
        self.note(ev, "RmaOpCompleteBlocking");
        self.completions.push((ev.location.id(), win, matching_id));
    }
    fn metric(&mut self, ev: &EventContext<'_>, metric: MetricRef, values: &[MetricValue]) {
        self.note(ev, "Metric");
        self.metrics.push((ev.location.id(), metric, values.to_vec()));
    }
    fn unknown(&mut self, ev: &EventContext<'_>) {
        self.note(ev, "Unknown");
    }
}

fn written_time(ev: &Ev) -> u64 {
    match *ev {
        Ev::Enter(t, _) | Ev::EnterWithAttributes(t, _) | Ev::Leave(t, _) => t,
        Ev::MpiSend(t, ..) | Ev::MpiRecv(t, ..) | Ev::MpiCollectiveBegin(t) | Ev::MpiCollectiveEnd(t, _) => t,
        Ev::RmaWinCreate(t) | Ev::RmaWinDestroy(t) | Ev::RmaPut(t, ..) | Ev::RmaOpCompleteBlocking(t, _) => t,
        Ev::Metric(t, _) => t,
    }
}

#[test]
fn events_read_back() {
    let dir = TempDir::new("read");
    let sample = fixture::write_sample(dir.path()).unwrap();
    let mut trace = TraceReader::open(&sample.anchor).unwrap();
    let mut seen = Collect::default();
    let summary = trace.read_all(&mut seen).unwrap();

    let total: usize = sample.events.values().map(Vec::len).sum();
    assert_eq!(summary.events, total as u64);
    assert!(!summary.stopped);
    assert_eq!(seen.counts, sample.counts());

    let (master0, master1) = (fixture::location_id(0, 0), fixture::location_id(1, 0));
    assert_eq!(seen.sends, vec![(master0, 1, sample.comm, fixture::TAG, fixture::MESSAGE_BYTES)]);
    assert_eq!(seen.recvs, vec![(master1, 0, sample.comm, fixture::TAG, fixture::MESSAGE_BYTES)]);
    assert_eq!(seen.puts, vec![(master0, sample.win, 1, fixture::PUT_BYTES, 7)]);
    assert_eq!(seen.completions, vec![(master0, sample.win, 7)]);
    assert_eq!(seen.collectives, vec![(master0, sample.allreduce), (master1, sample.allreduce)]);
    assert_eq!(
        seen.metrics,
        vec![(master0, sample.metric, vec![MetricValue::U64(fixture::PUT_BYTES), MetricValue::F64(42.5)])]
    );

    // The attributes of the one enter that has them; the string value
    // resolves through the definitions.
    assert_eq!(seen.attributes.len(), 1);
    let (location, attributes) = &seen.attributes[0];
    assert_eq!(*location, master0);
    assert_eq!(attributes[0], (sample.grid, AttributeValue::U32(fixture::GRID)));
    let AttributeValue::String(name) = attributes[1].1 else {
        panic!("kernel attribute is {:?}", attributes[1]);
    };
    assert_eq!(attributes[1].0, sample.kernel_name);
    assert_eq!(trace.defs().string(name), fixture::KERNEL_NAME);

    // Timestamps come back as written, shifted by the clock offsets where
    // a location has them (rank 1's master thread).
    for (id, events) in &sample.events {
        let shift = if *id == master1 { fixture::RANK1_OFFSET as u64 } else { 0 };
        let expected: Vec<u64> = events.iter().map(|ev| written_time(ev) + shift).collect();
        assert_eq!(seen.times.get(id).cloned().unwrap_or_default(), expected, "location {id}");
    }
}

#[test]
fn definitions_read_back() {
    let dir = TempDir::new("read-defs");
    let sample = fixture::write_sample(dir.path()).unwrap();
    let trace = TraceReader::open(&sample.anchor).unwrap();
    let defs = trace.defs();

    let clock = defs.clock_properties.unwrap();
    assert_eq!((clock.timer_resolution, clock.trace_length), (1_000_000_000, 1_000));
    assert_eq!(clock.realtime_timestamp, Some(1_700_000_000_000_000_000));

    assert_eq!(defs.locations.len(), 4);
    for (id, events) in &sample.events {
        let location = &defs.locations[&LocationRef::from_id(*id)];
        assert_eq!(location.number_of_events, events.len() as u64);
        assert_eq!(location.ty, LocationType::CpuThread);
    }
    let master0 = LocationRef::from_id(fixture::location_id(0, 0));
    let master1 = LocationRef::from_id(fixture::location_id(1, 0));
    assert_eq!(defs.location_name(master0), "Master thread");
    let group = &defs.location_groups[&defs.locations[&master1].group];
    assert_eq!(defs.string(group.name), "MPI Rank 1");
    assert_eq!(group.ty, LocationGroupType::Process);

    let names: Vec<&str> = defs.regions.keys().map(|&r| defs.region_name(r)).collect();
    assert_eq!(names, ["main", "worker", "MPI_Send", "MPI_Recv", "MPI_Allreduce", "MPI_Put"]);
    let worker = defs.regions.values().nth(1).unwrap();
    assert_eq!((defs.string(worker.source_file), worker.begin_line, worker.end_line), ("worker.c", 10, 20));

    assert_eq!(defs.string(defs.comms[&sample.comm].name), "MPI_COMM_WORLD");
    assert_eq!(defs.comm_rank_location(sample.comm, 1), Some(master1));
    assert_eq!(defs.comm_rank_location(sample.comm, 2), None);
    assert_eq!(defs.rma_wins[&sample.win].comm, sample.comm);

    assert_eq!(defs.attribute_name(sample.grid), "grid");
    assert_eq!(defs.attributes[&sample.kernel_name].ty, Type::String);
    match &defs.metrics[&sample.metric] {
        MetricDef::Instance { recorder, scope, class } => {
            assert_eq!(*recorder, master0);
            assert!(matches!(scope, Some(MetricScope::SystemTreeNode(_))));
            assert!(matches!(defs.metrics[class], MetricDef::Class { ref members, .. } if members.len() == 2));
        }
        other => panic!("metric is {other:?}"),
    }
    assert_eq!(defs.system_tree_nodes.len(), 2);
    let hostname = &defs.system_tree_node_properties[0];
    assert_eq!(defs.string(hostname.name), "hostname");
    let AttributeValue::String(value) = hostname.value else {
        panic!("hostname is {:?}", hostname.value);
    };
    assert_eq!(defs.string(value), "node0.example");
    assert_eq!(defs.location_group_properties.len(), 2);
    assert_eq!(defs.location_properties[0].value, AttributeValue::I32(3));
    assert_eq!(defs.paradigms[0].paradigm, Paradigm::Mpi);

    let offsets = &defs.clock_offsets[&master1];
    assert_eq!(offsets.len(), 2);
    assert_eq!((offsets[1].time, offsets[1].offset), (1_000, fixture::RANK1_OFFSET));
    assert!(!defs.clock_offsets.contains_key(&master0));
}

#[test]
fn a_visitor_can_stop_the_read() {
    struct FirstThree(u64);
    impl EventVisitor for FirstThree {
        fn enter(&mut self, _: &EventContext<'_>, _: RegionRef) {
            self.0 += 1;
        }
        fn leave(&mut self, _: &EventContext<'_>, _: RegionRef) {
            self.0 += 1;
        }
        fn should_stop(&self) -> bool {
            self.0 >= 3
        }
    }
    let dir = TempDir::new("stop");
    let sample = fixture::write_sample(dir.path()).unwrap();
    let mut trace = TraceReader::open(&sample.anchor).unwrap();
    let mut visitor = FirstThree(0);
    let summary = trace.read_all(&mut visitor).unwrap();
    assert!(summary.stopped);
    assert_eq!(visitor.0, 3);
    // The reader stays usable after a stopped read.
    let location = LocationRef::from_id(fixture::location_id(0, 1));
    let summary = trace.read_location(location, &mut Collect::default()).unwrap();
    assert_eq!(summary.events, 4);
}

#[test]
fn a_visitor_panic_reaches_the_caller() {
    struct Panics;
    impl EventVisitor for Panics {
        fn enter(&mut self, _: &EventContext<'_>, _: RegionRef) {
            panic!("visitor bug");
        }
    }
    let dir = TempDir::new("panic");
    let sample = fixture::write_sample(dir.path()).unwrap();
    let mut trace = TraceReader::open(&sample.anchor).unwrap();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| trace.read_all(&mut Panics)));
    let payload = caught.expect_err("the panic must propagate");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"visitor bug"));
}

#[test]
fn unknown_location_is_an_error() {
    let dir = TempDir::new("unknown");
    let sample = fixture::write_sample(dir.path()).unwrap();
    let mut trace = TraceReader::open(&sample.anchor).unwrap();
    let err = trace.read_location(LocationRef::from_id(99), &mut Collect::default()).unwrap_err();
    assert!(matches!(err, Error::UnknownLocation { id: 99 }), "{err}");
}

/// Every record in (location, time) order as `read_all` gives it; the read
/// by time must give the same records, ordered by time across locations.
#[derive(Default)]
struct Sequence(Vec<(u64, u64)>);

impl Sequence {
    fn note(&mut self, ev: &EventContext<'_>) {
        self.0.push((ev.location.id(), ev.time));
    }
}

impl EventVisitor for Sequence {
    fn enter(&mut self, ev: &EventContext<'_>, _: RegionRef) {
        self.note(ev);
    }
    fn leave(&mut self, ev: &EventContext<'_>, _: RegionRef) {
        self.note(ev);
    }
    fn mpi_send(&mut self, ev: &EventContext<'_>, _: u32, _: CommRef, _: u32, _: u64) {
        self.note(ev);
    }
    fn mpi_recv(&mut self, ev: &EventContext<'_>, _: u32, _: CommRef, _: u32, _: u64) {
        self.note(ev);
    }
    fn mpi_collective_begin(&mut self, ev: &EventContext<'_>) {
        self.note(ev);
    }
    fn mpi_collective_end(&mut self, ev: &EventContext<'_>, _: &Collective) {
        self.note(ev);
    }
    fn rma_win_create(&mut self, ev: &EventContext<'_>, _: RmaWinRef) {
        self.note(ev);
    }
    fn rma_win_destroy(&mut self, ev: &EventContext<'_>, _: RmaWinRef) {
        self.note(ev);
    }
    fn rma_put(&mut self, ev: &EventContext<'_>, _: RmaWinRef, _: u32, _: u64, _: u64) {
        self.note(ev);
    }
    fn rma_op_complete_blocking(&mut self, ev: &EventContext<'_>, _: RmaWinRef, _: u64) {
        self.note(ev);
    }
    fn metric(&mut self, ev: &EventContext<'_>, _: MetricRef, _: &[MetricValue]) {
        self.note(ev);
    }
}

#[test]
fn events_read_by_time_are_every_location_s_merged_in_time_order() {
    let dir = TempDir::new("by-time");
    let sample = fixture::write_sample(dir.path()).unwrap();
    let mut by_location = Sequence::default();
    TraceReader::open(&sample.anchor).unwrap().read_all(&mut by_location).unwrap();

    let mut trace = TraceReader::open(&sample.anchor).unwrap();
    let locations = trace.locations();
    let mut by_time = Sequence::default();
    let summary = trace.read_by_time(&locations, &mut by_time).unwrap();
    assert_eq!(summary.events, by_location.0.len() as u64);
    assert!(by_time.0.windows(2).all(|w| w[0].1 <= w[1].1), "not in time order: {:?}", by_time.0);
    // Each location's own records keep their order.
    let mut expected = by_location.0.clone();
    expected.sort_by_key(|&(_, t)| t);
    let mut got = by_time.0.clone();
    got.sort_by_key(|&(_, t)| t);
    assert_eq!(got, expected);
    for id in sample.events.keys() {
        let mine = |s: &Sequence| s.0.iter().filter(|(l, _)| l == id).copied().collect::<Vec<_>>();
        assert_eq!(mine(&by_time), mine(&by_location), "location {id}");
    }
    // The locations of the sample overlap in time: the order interleaves.
    let first_switch = by_time.0.windows(2).filter(|w| w[0].0 != w[1].0).count();
    assert!(first_switch > sample.events.len(), "{:?}", by_time.0);

    // A second pass needs the archive opened again.
    let err = trace.read_by_time(&locations, &mut Sequence::default()).unwrap_err();
    assert!(matches!(err, Error::AlreadyReadByTime), "{err}");
    let err = trace.read_location(locations[0], &mut Sequence::default()).unwrap_err();
    assert!(matches!(err, Error::AlreadyReadByTime), "{err}");

    // A subset: only its locations' records.
    let mut trace = TraceReader::open(&sample.anchor).unwrap();
    let master0 = LocationRef::from_id(fixture::location_id(0, 0));
    let mut one = Sequence::default();
    trace.read_by_time(&[master0], &mut one).unwrap();
    assert_eq!(one.0, by_location.0.iter().filter(|(l, _)| *l == master0.id()).copied().collect::<Vec<_>>());
}
