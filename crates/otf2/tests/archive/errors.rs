//! Error paths: never overwrite, never panic on bad input, misuse is an
//! error, and an archive abandoned midway is still finalized.

use std::fs;
use std::path::Path;

use otf2::reader::{EventContext, EventVisitor, TraceReader};
use otf2::*;

use crate::fixture::{self, TempDir};

/// A file listing with sizes, to show nothing was touched.
fn snapshot(dir: &Path) -> Vec<(String, u64)> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                stack.push(entry.path());
            } else {
                files.push((entry.path().display().to_string(), meta.len()));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn create_refuses_an_existing_archive() {
    let dir = TempDir::new("exists");
    let sample = fixture::write_sample(dir.path()).unwrap();
    let before = snapshot(dir.path());

    let err = ArchiveWriter::create(dir.path(), "traces").unwrap_err();
    match &err {
        Error::AlreadyExists { path } => {
            assert!(path.ends_with("traces.def") || path.ends_with("traces") || path.ends_with("traces.otf2"), "{err}")
        }
        other => panic!("expected AlreadyExists, got {other}"),
    }
    assert!(err.to_string().contains("already exists"), "{err}");
    assert_eq!(snapshot(dir.path()), before);
    TraceReader::open(&sample.anchor).expect("the existing archive is intact");
}

#[test]
fn create_refuses_each_part_of_an_archive() {
    let dir = TempDir::new("parts");
    fs::write(dir.path().join("a.otf2"), b"").unwrap();
    fs::create_dir(dir.path().join("b")).unwrap();
    fs::write(dir.path().join("c.def"), b"").unwrap();
    for (name, part) in [("a", "a.otf2"), ("b", "b"), ("c", "c.def")] {
        match ArchiveWriter::create(dir.path(), name) {
            Err(Error::AlreadyExists { path }) => assert_eq!(path, dir.path().join(part)),
            other => panic!("{name}: expected AlreadyExists, got {other:?}"),
        }
    }
    // Nothing was added next to them.
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 3);
}

#[test]
fn create_rejects_bad_names_and_makes_missing_directories() {
    let dir = TempDir::new("names");
    for name in ["", "a/b", "..", "nul\0"] {
        assert!(matches!(ArchiveWriter::create(dir.path(), name), Err(Error::InvalidName { .. })), "{name:?}");
    }
    let nested = dir.path().join("x/y");
    ArchiveWriter::create(&nested, "t").unwrap().close().unwrap();
    assert!(nested.join("t.otf2").is_file());
    let trace = TraceReader::open(&nested.join("t.otf2")).unwrap();
    assert!(trace.defs().locations.is_empty());
}

fn open_err(path: &Path) -> Error {
    match TraceReader::open(path) {
        Ok(_) => panic!("{} opened", path.display()),
        Err(err) => err,
    }
}

#[test]
fn reading_bad_files_is_an_error() {
    let dir = TempDir::new("bad");
    let sample = fixture::write_sample(&dir.path().join("good")).unwrap();
    let anchor = fs::read(&sample.anchor).unwrap();

    let cases: [(&str, &[u8]); 4] = [
        ("empty.otf2", b""),
        ("text.otf2", b"this is not an OTF2 anchor file\n"),
        ("garbage.otf2", &[0xA5; 512]),
        ("truncated.otf2", &anchor[..anchor.len() / 2]),
    ];
    for (name, bytes) in cases {
        let path = dir.path().join(name);
        fs::write(&path, bytes).unwrap();
        let err = open_err(&path);
        assert!(matches!(err, Error::NotAnArchive { .. }), "{name}: {err}");
        assert!(err.to_string().contains(name), "{name}: {err}");
    }
    assert!(matches!(open_err(&dir.path().join("missing.otf2")), Error::Io { .. }));
    assert!(matches!(open_err(dir.path()), Error::NotAnArchive { .. }));
}

#[test]
fn truncated_definitions_or_events_are_errors() {
    let dir = TempDir::new("trunc");
    let sample = fixture::write_sample(dir.path()).unwrap();
    let master0 = fixture::location_id(0, 0);

    // Cut the global definitions in half: open fails.
    let defs = dir.path().join("traces.def");
    let original = fs::read(&defs).unwrap();
    fs::write(&defs, &original[..original.len() / 2]).unwrap();
    assert!(matches!(open_err(&sample.anchor), Error::NotAnArchive { .. }));
    fs::write(&defs, &original).unwrap();

    // Cut an event file anywhere: open fails, naming the file, before
    // libotf2 reads it (it would read a file cut at a chunk's end, or
    // inside its last chunk, for ever).
    let events = dir.path().join(format!("traces/{master0}.evt"));
    let original = fs::read(&events).unwrap();
    for len in [0, 1, 17, 18, original.len() / 2, original.len() - 20, original.len() - 2] {
        fs::write(&events, &original[..len]).unwrap();
        let err = open_err(&sample.anchor);
        let Error::CutEvents { path, location, at, chunk, .. } = &err else { panic!("cut at {len}: {err}") };
        assert_eq!((path, *location, *at, *chunk), (&events, master0, len as u64, 1), "{err}");
        assert!(err.to_string().contains(&format!("is cut short at byte {len} of its last chunk")), "{err}");
    }
    // Without the end-of-buffer mark after the end-of-file record, it
    // reads as before.
    fs::write(&events, &original[..original.len() - 1]).unwrap();
    let mut trace = TraceReader::open(&sample.anchor).unwrap();
    struct Nothing;
    impl EventVisitor for Nothing {}
    trace.read_location(LocationRef::from_id(master0), &mut Nothing).unwrap();

    // A missing event file is an error too.
    fs::remove_file(&events).unwrap();
    let mut trace = TraceReader::open(&sample.anchor).unwrap();
    assert!(trace.read_location(LocationRef::from_id(master0), &mut Nothing).is_err());
}

#[test]
fn misuse_is_an_error() {
    let dir = TempDir::new("misuse");
    let mut archive = ArchiveWriter::create(dir.path(), "t").unwrap();
    let defs = archive.defs();
    let root = defs.system_tree_node("m", "machine", None);
    let group = defs.location_group("p", LocationGroupType::Process, root, None);
    let location = defs.location(1, "t", LocationType::CpuThread, group).unwrap();
    let region = defs.region(Region::new("r", RegionRole::Function, Paradigm::User));
    assert!(matches!(
        defs.metric_class(&[], MetricOccurrence::Synchronous, RecorderKind::Cpu),
        Err(Error::BadMetricClassSize { count: 0 })
    ));

    let stranger = LocationRef::from_id(2);
    assert!(matches!(archive.event_writer(stranger), Err(Error::UnknownLocation { id: 2 })));
    assert!(matches!(archive.clock_offset(stranger, 0, 0, 0.0), Err(Error::UnknownLocation { id: 2 })));

    let mut writer = archive.event_writer(location).unwrap();
    writer.enter(1, region).unwrap();
    let too_many = vec![MetricValue::U64(0); 256];
    assert!(matches!(
        writer.metric(2, MetricRef::from_id(0), &too_many),
        Err(Error::TooManyMetricValues { count: 256 })
    ));
    // OTF2 refuses one attribute twice on a record; the next record is
    // clean.
    let attribute = writer.defs().attribute("a", "", Type::U8);
    let twice = [(attribute, AttributeValue::U8(1)), (attribute, AttributeValue::U8(2))];
    assert!(writer.attributes(&twice).is_err());
    writer.leave(3, region).unwrap();
    assert_eq!(writer.close().unwrap(), 2);
    assert!(matches!(archive.event_writer(location), Err(Error::EventsAlreadyWritten { id: 1 })));
    archive.close().unwrap();
}

#[test]
fn abandoned_writers_still_finalize_the_archive() {
    let dir = TempDir::new("drop");
    let anchor = {
        let mut archive = ArchiveWriter::create(dir.path(), "t").unwrap();
        let defs = archive.defs();
        let root = defs.system_tree_node("m", "machine", None);
        let group = defs.location_group("p", LocationGroupType::Process, root, None);
        let location = defs.location(0, "t", LocationType::CpuThread, group).unwrap();
        let region = defs.region(Region::new("r", RegionRole::Function, Paradigm::User));
        let mut writer = archive.event_writer(location).unwrap();
        for i in 0..1000 {
            writer.enter(2 * i, region).unwrap();
            writer.leave(2 * i + 1, region).unwrap();
        }
        // Neither the event writer nor the archive is closed.
        drop(writer);
        archive.anchor_path().to_owned()
    };
    struct Count(u64);
    impl EventVisitor for Count {
        fn enter(&mut self, _: &EventContext<'_>, _: RegionRef) {
            self.0 += 1;
        }
    }
    let mut trace = TraceReader::open(&anchor).unwrap();
    assert_eq!(trace.defs().locations.values().next().unwrap().number_of_events, 2000);
    let clock = trace.defs().clock_properties.unwrap();
    // Without explicit clock properties the observed span is written.
    assert_eq!((clock.global_offset, clock.trace_length), (0, 1999));
    let mut count = Count(0);
    trace.read_all(&mut count).unwrap();
    assert_eq!(count.0, 1000);
}
