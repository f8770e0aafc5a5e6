//! Archives written by several threads at once (`ArchiveWriter::concurrent`)
//! and by processes together (`ArchiveWriter::create_collective`, here one
//! process: the callbacks and exchanges run, with nobody else), read back.

use std::collections::BTreeMap;

use otf2::collective::{bcast_bytes, gather_bytes, scatter_bytes};
use otf2::reader::{EventContext, EventVisitor, TraceReader};
use otf2::*;

use crate::fixture::TempDir;

/// A "job" of one process.
struct Solo;

impl Collectives for Solo {
    fn rank(&self) -> u32 {
        0
    }
    fn size(&self) -> u32 {
        1
    }
    fn barrier(&self) -> bool {
        true
    }
    fn bcast(&self, _: &mut [u8], root: u32) -> bool {
        root == 0
    }
    fn gather(&self, input: &[u8], output: &mut [u8], _: u32) -> bool {
        output.len() == input.len() && {
            output.copy_from_slice(input);
            true
        }
    }
    fn gatherv(&self, input: &[u8], output: &mut [u8], counts: &[usize], _: u32) -> bool {
        counts == [input.len()] && self.gather(input, output, 0)
    }
    fn scatter(&self, input: &[u8], output: &mut [u8], _: u32) -> bool {
        self.gather(input, output, 0)
    }
    fn scatterv(&self, input: &[u8], counts: &[usize], output: &mut [u8], _: u32) -> bool {
        counts == [output.len()] && self.gather(input, output, 0)
    }
}

/// Region names entered, per location, in order.
#[derive(Default)]
struct Entered(BTreeMap<u64, Vec<(u64, RegionRef, usize)>>);

impl EventVisitor for Entered {
    fn enter(&mut self, ev: &EventContext<'_>, region: RegionRef) {
        let attributes = ev.attributes.iter().count();
        self.0.entry(ev.location.id()).or_default().push((ev.time, region, attributes));
    }
}

/// Four locations; each writer enters its region 500 times, attaching a
/// string attribute defined while it writes (a name of its own).
fn define(defs: &mut Definitions) -> (Vec<LocationRef>, RegionRef) {
    let root = defs.system_tree_node("m", "machine", None);
    let group = defs.location_group("p", LocationGroupType::Process, root, None);
    let locations = (0..4).map(|i| defs.location(i, &format!("t{i}"), LocationType::CpuThread, group).unwrap());
    let locations = locations.collect();
    (locations, defs.region(Region::new("r", RegionRole::Function, Paradigm::User)))
}

fn write(mut w: EventWriter<'_>, i: u64, region: RegionRef) -> u64 {
    let attribute = w.defs().attribute(&format!("attr{i}"), "", Type::String);
    for t in 0..500 {
        let value = w.defs().string(&format!("value {i} {}", t % 3));
        w.attribute(attribute, AttributeValue::String(value)).unwrap();
        w.enter(10 * t, region).unwrap();
        w.leave(10 * t + 5, region).unwrap();
    }
    w.close().unwrap()
}

fn read(anchor: &std::path::Path) -> Entered {
    let mut trace = TraceReader::open(anchor).unwrap();
    for l in trace.defs().locations.values() {
        assert_eq!(l.number_of_events, 1000, "{}", l.name);
    }
    let mut entered = Entered::default();
    trace.read_all(&mut entered).unwrap();
    entered
}

#[test]
fn writers_of_several_threads_make_one_archive() {
    let dir = TempDir::new("threads");
    let mut archive = ArchiveWriter::create(dir.path(), "t").unwrap();
    let (locations, region) = define(archive.defs());
    let written: Vec<u64> = archive.concurrent(|writers| {
        std::thread::scope(|s| {
            let handles: Vec<_> = locations
                .iter()
                .enumerate()
                .map(|(i, &l)| s.spawn(move || write(writers.event_writer(l).unwrap(), i as u64, region)))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        })
    });
    assert_eq!(written, [1000; 4]);
    let anchor = archive.anchor_path().to_owned();
    archive.close().unwrap();
    let entered = read(&anchor);
    assert_eq!(entered.0.len(), 4);
    for events in entered.0.values() {
        assert_eq!(events.len(), 500);
        assert!(events.windows(2).all(|w| w[0].0 < w[1].0));
        assert!(events.iter().all(|e| e.2 == 1), "one attribute on every Enter");
    }
}

#[test]
fn an_archive_written_together_by_one_process_reads_back() {
    let comm: std::sync::Arc<dyn Collectives> = std::sync::Arc::new(Solo);
    assert_eq!(gather_bytes(&*comm, b"abc", 0).unwrap(), [b"abc".to_vec()]);
    assert_eq!(scatter_bytes(&*comm, &[b"xy".to_vec()], 0).unwrap(), b"xy");
    assert_eq!(bcast_bytes(&*comm, b"q", 0).unwrap(), b"q");

    let dir = TempDir::new("together");
    let mut archive = ArchiveWriter::create_collective(dir.path(), "t", comm.clone()).unwrap();
    let (locations, region) = define(archive.defs());
    // The locations this process writes: all (in a job of several, each
    // rank names its own).
    archive.write_only(locations.iter().copied());
    for (i, &l) in locations.iter().enumerate() {
        write(archive.event_writer(l).unwrap(), i as u64, region);
    }
    let anchor = archive.anchor_path().to_owned();
    archive.close().unwrap();
    let entered = read(&anchor);
    assert_eq!(entered.0.len(), 4);
    // A second archive of the same name is refused on every rank.
    assert!(matches!(ArchiveWriter::create_collective(dir.path(), "t", comm), Err(Error::AlreadyExists { .. })));
}
