//! Recorder → stream file → reader round trips, damage included.

use std::io::Write;

use super::*;
use crate::raw::{Problem, RawFile};

fn recorder(dir: &Path, total: u64) -> Recorder {
    Recorder::create(dir, Producer::Synthetic, RecorderOptions { total_memory: total, filter: None }).unwrap()
}

fn all_events(raw: &RawFile) -> Vec<(u32, u64, Event)> {
    let mut out = Vec::new();
    let mut buf = Vec::new();
    for c in &raw.chunks {
        raw.read_payload(c, &mut buf).unwrap();
        out.extend(RawFile::events(c, &buf).map(|(t, e)| (c.header.location, t, e)));
    }
    out
}

#[test]
fn events_of_several_threads_come_back_complete() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recorder(dir.path(), 256 << 10);
    let region = rec.region("work", None, Paradigm::User, RegionRole::Function, "").unwrap();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let rec = rec.clone();
            std::thread::spawn(move || {
                for i in 0..50_000u64 {
                    let t = crate::clock::now();
                    rec.record(t, &Event::Enter { region });
                    rec.record(t + i % 3, &Event::Leave { region });
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    rec.finish();
    let raw = RawFile::open(rec.path()).unwrap();
    assert!(raw.problems.is_empty(), "{:?}", raw.problems);
    let events = all_events(&raw);
    assert_eq!(events.len(), 4 * 100_000);
    let locations: std::collections::HashSet<u32> = events.iter().map(|e| e.0).collect();
    assert_eq!(locations.len(), 4);
    assert!(raw.definitions.iter().any(|d| matches!(d, Definition::StreamEnd { .. })));
    assert_eq!(rec.dropped(), 0);
    // 4 bytes an event: tag, one-byte delta (mostly), region.
    let per_event = raw.size as f64 / events.len() as f64;
    assert!(per_event < 6.0, "{per_event} bytes per event");
}

#[test]
fn definitions_precede_the_events_that_use_them() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recorder(dir.path(), 64 << 10);
    let mut regions = Vec::new();
    for i in 0..2000 {
        let r = rec.region(&format!("r{i}"), None, Paradigm::User, RegionRole::Function, "g").unwrap();
        regions.push(r);
        rec.record(crate::clock::now(), &Event::Enter { region: r });
    }
    // Cut the file after the first events chunk: every region it uses must
    // already be defined in what remains.
    rec.flush_all();
    let raw = RawFile::open(rec.path()).unwrap();
    let first = raw.chunks[0];
    let cut = first.offset + u64::from(first.header.payload_len);
    let bytes = std::fs::read(rec.path()).unwrap();
    let path = dir.path().join("cut.gtr");
    std::fs::write(&path, &bytes[..cut as usize]).unwrap();
    let raw = RawFile::open(&path).unwrap();
    let defined: std::collections::HashSet<u32> = raw
        .definitions
        .iter()
        .filter_map(|d| if let Definition::Region { id, .. } = d { Some(*id) } else { None })
        .collect();
    for (_, _, e) in all_events(&raw) {
        let Event::Enter { region } = e else { panic!() };
        assert!(defined.contains(&region));
    }
}

#[test]
fn truncated_and_damaged_files_are_salvaged() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recorder(dir.path(), 64 << 10);
    let region = rec.region("f", None, Paradigm::User, RegionRole::Function, "").unwrap();
    for i in 0..200_000u64 {
        rec.record(1_000_000 + i, &Event::Enter { region });
    }
    rec.finish();
    let good = RawFile::open(rec.path()).unwrap();
    let chunks = good.chunks.len();
    assert!(chunks >= 5, "{chunks}");
    let bytes = std::fs::read(rec.path()).unwrap();

    // Cut inside the third events chunk: the first two survive whole.
    let third = good.chunks[2];
    let cut_at = third.offset as usize + 100;
    let truncated = dir.path().join("truncated.gtr");
    std::fs::write(&truncated, &bytes[..cut_at]).unwrap();
    let raw = RawFile::open(&truncated).unwrap();
    assert_eq!(raw.chunks.len(), 2);
    assert!(matches!(raw.problems[..], [Problem::Truncated { .. }]), "{:?}", raw.problems);
    let kept: u32 = good.chunks[..2].iter().map(|c| c.header.event_count).sum();
    assert_eq!(all_events(&raw).len() as u32, kept);

    // Overwrite the second chunk's header: the reader skips to the third.
    let mut damaged = bytes.clone();
    let second_header = good.chunks[1].offset as usize - crate::raw::chunk::HEADER_LEN;
    damaged[second_header + 9] ^= 0xff;
    let path = dir.path().join("damaged.gtr");
    std::fs::write(&path, &damaged).unwrap();
    let raw = RawFile::open(&path).unwrap();
    assert_eq!(raw.chunks.len(), chunks - 1);
    assert!(matches!(raw.problems[..], [Problem::Damaged { .. }]), "{:?}", raw.problems);

    // Flip a payload byte of the first chunk: its checksum fails on read.
    let mut flipped = bytes.clone();
    flipped[good.chunks[0].offset as usize + 10] ^= 1;
    let path = dir.path().join("flipped.gtr");
    std::fs::write(&path, &flipped).unwrap();
    let raw = RawFile::open(&path).unwrap();
    let mut buf = Vec::new();
    assert!(matches!(raw.read_payload(&raw.chunks[0], &mut buf), Err(Problem::BadPayload { .. })));
    assert!(raw.read_payload(&raw.chunks[1], &mut buf).is_ok());
}

#[test]
fn an_idle_thread_s_events_are_written_within_about_a_second() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recorder(dir.path(), 1 << 20);
    let region = rec.region("f", None, Paradigm::User, RegionRole::Function, "").unwrap();
    rec.record(crate::clock::now(), &Event::Enter { region });
    // No more events, no flush: the flusher thread writes them.
    std::thread::sleep(Duration::from_millis(1600));
    let raw = RawFile::open(rec.path()).unwrap();
    assert_eq!(all_events(&raw).len(), 1);
    // And the thread goes on recording into a fresh buffer.
    rec.record(crate::clock::now(), &Event::Leave { region });
    rec.finish();
    assert_eq!(all_events(&RawFile::open(rec.path()).unwrap()).len(), 2);
}

#[test]
fn garbage_is_not_a_stream() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.0.mpi.gtr");
    std::fs::File::create(&path).unwrap().write_all(&[7u8; 5000]).unwrap();
    assert!(RawFile::open(&path).is_err());
}

#[test]
fn filtered_regions_are_not_defined() {
    let dir = tempfile::tempdir().unwrap();
    let filter = Filter::parse("SCOREP_REGION_NAMES_BEGIN EXCLUDE MPI_Comm_* SCOREP_REGION_NAMES_END", "t").unwrap();
    let rec = Recorder::create(
        dir.path(),
        Producer::Synthetic,
        RecorderOptions { total_memory: 1 << 20, filter: Some(filter) },
    )
    .unwrap();
    assert!(rec.region("MPI_Comm_rank", None, Paradigm::Mpi, RegionRole::Function, "").is_none());
    assert!(rec.region("MPI_Send", None, Paradigm::Mpi, RegionRole::Point2Point, "").is_some());
}

#[test]
fn a_second_stream_of_the_same_process_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let _a = recorder(dir.path(), 1 << 20);
    assert!(Recorder::create(dir.path(), Producer::Synthetic, RecorderOptions::default()).is_err());
}
