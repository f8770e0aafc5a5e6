//! Events go to disk while they are written: memory holds at most a
//! buffer's budget of them, however long the location's stream.

use otf2::reader::{EventContext, EventVisitor, TraceReader};
use otf2::*;

use crate::fixture::TempDir;

#[test]
fn events_reach_disk_before_the_writer_closes() {
    const PAIRS: u64 = 1_000_000;
    let dir = TempDir::new("stream");
    let mut archive = ArchiveWriter::create(dir.path(), "big").unwrap();
    let defs = archive.defs();
    let root = defs.system_tree_node("m", "machine", None);
    let group = defs.location_group("p", LocationGroupType::Process, root, None);
    let location = defs.location(3, "t", LocationType::CpuThread, group).unwrap();
    let region = defs.region(Region::new("r", RegionRole::Function, Paradigm::User));

    let mut writer = archive.event_writer(location).unwrap();
    for i in 0..PAIRS {
        writer.enter(10 * i, region).unwrap();
        writer.leave(10 * i + 5, region).unwrap();
    }
    // About 24 MB of records so far: more than one buffer's budget, so
    // OTF2 must have flushed part of them to the event file already.
    let on_disk = std::fs::metadata(dir.path().join("big/3.evt")).unwrap().len();
    assert!(on_disk >= 8 << 20, "only {on_disk} bytes on disk before close");
    assert_eq!(writer.close().unwrap(), 2 * PAIRS);
    archive.close().unwrap();

    struct Check {
        events: u64,
        last: u64,
    }
    impl EventVisitor for Check {
        fn enter(&mut self, ev: &EventContext<'_>, _: RegionRef) {
            assert!(ev.time >= self.last);
            self.last = ev.time;
            self.events += 1;
        }
        fn leave(&mut self, ev: &EventContext<'_>, _: RegionRef) {
            assert_eq!(ev.time, self.last + 5);
            self.last = ev.time;
            self.events += 1;
        }
    }
    let mut trace = TraceReader::open(&dir.path().join("big.otf2")).unwrap();
    let mut check = Check { events: 0, last: 0 };
    trace.read_all(&mut check).unwrap();
    assert_eq!(check.events, 2 * PAIRS);
}
