//! Recorder → stream file → reader round trips, damage included.

use std::io::Write;

use super::*;
use raw::{Paradigm, Problem, RawFile, RegionRole};

fn recorder(dir: &Path, total: u64) -> Recorder {
    Recorder::create(dir, Producer::Synthetic, RecorderOptions { total_memory: total, ..RecorderOptions::default() })
        .unwrap()
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
                    let t = gputrace_clock::now();
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
    // 4 bytes an event: tag, one-byte delta (mostly), region. What the
    // file holds on disk: slots give back the pages they did not use.
    let on_disk = std::os::unix::fs::MetadataExt::blocks(&std::fs::metadata(rec.path()).unwrap()) * 512;
    let per_event = on_disk as f64 / events.len() as f64;
    assert!(per_event < 6.0, "{per_event} bytes per event");
}

/// The child's part of the kill tests: records into a stream in
/// `_GPUTRACE_TEST_KILL_DIR` (`config::hooks::KILL_DIR`), defining a new region every 50 events, and
/// after each event writes how many it recorded to `count` (8 bytes,
/// `pwrite`), until it is killed.
#[test]
fn kill_child_records_until_killed() {
    let Some(dir) = std::env::var_os(config::hooks::KILL_DIR.name) else { return };
    let dir = PathBuf::from(dir);
    let count = std::fs::OpenOptions::new().write(true).create(true).truncate(true).open(dir.join("count")).unwrap();
    let rec = recorder(&dir, 256 << 10);
    let mut region = 0;
    for i in 0u64.. {
        if i % 50 == 0 {
            region = rec.region(&format!("r{i}"), None, Paradigm::User, RegionRole::Function, "").unwrap();
        }
        let t = gputrace_clock::now();
        rec.record_many(&[(t, Event::Enter { region }), (t + 1, Event::Leave { region })]);
        std::os::unix::fs::FileExt::write_all_at(&count, &(i + 1).to_le_bytes(), 0).unwrap();
    }
}

/// Starts [`kill_child_records_until_killed`] in a process of its own.
fn recording_child(dir: &Path) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "tests::kill_child_records_until_killed", "--nocapture", "--test-threads=1"])
        .env(config::hooks::KILL_DIR.name, dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap()
}

/// SIGKILL at a random instant loses at most the access being written,
/// and every event that survives has its region defined.
#[test]
fn a_killed_process_keeps_every_committed_event() {
    for round in 0..6u64 {
        let dir = tempfile::tempdir().unwrap();
        let mut child = recording_child(dir.path());
        // Different instants: 150 ms to about 0.9 s after the start.
        std::thread::sleep(Duration::from_millis(150 + (round * 7919) % 750));
        child.kill().unwrap();
        child.wait().unwrap();
        let published = u64::from_le_bytes(std::fs::read(dir.path().join("count")).unwrap()[..8].try_into().unwrap());
        assert!(published > 1000, "round {round}: the child recorded only {published} accesses");
        let stream = std::fs::read_dir(dir.path().join("raw")).unwrap().next().unwrap().unwrap().path();
        let raw = RawFile::open(&stream).unwrap();
        assert!(raw.problems.iter().all(|p| !p.is_damage()), "round {round}: {:?}", raw.problems);
        let events = all_events(&raw);
        // Each access is an Enter and a Leave, committed together.
        assert_eq!(events.len() % 2, 0);
        let accesses = events.len() as u64 / 2;
        assert!(
            accesses == published || accesses == published + 1,
            "round {round}: {accesses} accesses in the file, {published} published"
        );
        let defined: std::collections::HashSet<u32> = raw
            .definitions
            .iter()
            .filter_map(|d| if let Definition::Region { id, .. } = d { Some(*id) } else { None })
            .collect();
        for (_, _, e) in &events {
            let (Event::Enter { region } | Event::Leave { region }) = e else { panic!("{e:?}") };
            assert!(defined.contains(region), "round {round}: region {region} used but not defined");
        }
        assert!(!raw.definitions.iter().any(|d| matches!(d, Definition::StreamEnd { .. })));
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

    // Cut inside the third events chunk: the first two survive whole, and
    // the events of the third before the cut.
    let third = good.chunks[2];
    let cut_at = third.offset as usize + 100;
    let truncated = dir.path().join("truncated.gtr");
    std::fs::write(&truncated, &bytes[..cut_at]).unwrap();
    let raw = RawFile::open(&truncated).unwrap();
    assert_eq!(raw.chunks.len(), 3);
    assert!(matches!(raw.problems[..], [Problem::Truncated { .. }]), "{:?}", raw.problems);
    let whole: u32 = good.chunks[..2].iter().map(|c| c.header.event_count).sum();
    let kept = all_events(&raw).len() as u32;
    assert!(kept > whole + 20 && kept < whole + 100, "{kept} events kept, {whole} in the first two chunks");

    // Overwrite the second chunk's header: the reader skips to the third.
    let mut damaged = bytes.clone();
    let second_header = good.chunks[1].offset as usize - raw::chunk::HEADER_LEN;
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
fn a_recorded_event_is_in_the_file_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recorder(dir.path(), 1 << 20);
    let region = rec.region("f", None, Paradigm::User, RegionRole::Function, "").unwrap();
    rec.record(gputrace_clock::now(), &Event::Enter { region });
    // No flush: the event is in the mapped slot, so in the file.
    let raw = RawFile::open(rec.path()).unwrap();
    assert_eq!(all_events(&raw).len(), 1);
    // And the thread goes on recording into a fresh buffer.
    rec.record(gputrace_clock::now(), &Event::Leave { region });
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
        RecorderOptions { total_memory: 1 << 20, filter: Some(filter), ..RecorderOptions::default() },
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

/// A tmpfs of `kib` KiB, unmounted on drop. Mounting needs root: where
/// it cannot be done the test fails under `CI=true` and is skipped with a
/// note elsewhere.
struct TinyDisk(tempfile::TempDir);

impl TinyDisk {
    fn mount(kib: u32) -> Option<TinyDisk> {
        let dir = tempfile::tempdir().unwrap();
        let ok = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={kib}k"), "tmpfs"])
            .arg(dir.path())
            .output()
            .is_ok_and(|o| o.status.success());
        if !ok {
            assert!(std::env::var("CI").as_deref() != Ok("true"), "CI=true: cannot mount a tmpfs (needs root)");
            eprintln!("note: cannot mount a tmpfs here (not root?); test skipped");
            return None;
        }
        Some(TinyDisk(dir))
    }
}

impl Drop for TinyDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount").arg(self.0.path()).output();
    }
}

/// When the disk fills up, every event is either in the file or counted as
/// dropped, and the stream is still closed (StreamEnd) through the slot
/// reserved for it.
#[test]
fn a_full_disk_counts_every_event_it_could_not_write() {
    for kib in [128, 192, 320] {
        let Some(disk) = TinyDisk::mount(kib) else { return };
        let rec = recorder(disk.0.path(), 64 << 10);
        let region = rec.region("f", None, Paradigm::User, RegionRole::Function, "").unwrap();
        let n = 200_000u64;
        let threads: Vec<_> = (0..2)
            .map(|_| {
                let rec = rec.clone();
                std::thread::spawn(move || {
                    for i in 0..n / 2 {
                        rec.record(1_000_000 + i, &Event::Enter { region });
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        rec.finish();
        assert!(rec.dropped() > 0, "{kib} KiB: the disk did not fill");
        let raw = RawFile::open(rec.path()).unwrap();
        assert!(raw.problems.iter().all(|p| !p.is_damage()), "{kib} KiB: {:?}", raw.problems);
        let written = all_events(&raw).len() as u64;
        let dropped = raw
            .definitions
            .iter()
            .filter_map(|d| if let Definition::Dropped { count, .. } = d { Some(*count) } else { None })
            .max();
        assert_eq!(dropped, Some(rec.dropped()), "{kib} KiB: the count is in the file");
        assert_eq!(written + rec.dropped(), n, "{kib} KiB: {written} written, {} dropped", rec.dropped());
        assert!(raw.definitions.iter().any(|d| matches!(d, Definition::StreamEnd { .. })), "{kib} KiB: not closed");
    }
}

/// A stream's writer holds a lock while it lives: a merge can tell that
/// a rank outlived its launcher and wait for it.
#[test]
fn a_live_writer_is_seen_and_a_dead_one_is_not() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = recording_child(dir.path());
    let raw = dir.path().join("raw");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let stream = loop {
        if let Some(Ok(e)) = std::fs::read_dir(&raw).ok().and_then(|mut d| d.next()) {
            break e.path();
        }
        assert!(std::time::Instant::now() < deadline, "the child made no stream");
        std::thread::sleep(Duration::from_millis(10));
    };
    // The lock is taken right after the file is created.
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(raw::writer_pid(&stream).unwrap(), Some(child.id()));
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(raw::writer_pid(&stream).unwrap(), None);
}

/// Runs this test binary again as a child running only `test`, with the
/// panic hook's variable set; returns the child's stderr.
pub(crate) fn panicking_child(test: &str) -> String {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads=1"])
        .env(config::hooks::PANIC.name, "1")
        .env_remove("RUST_BACKTRACE")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The child's part of the panic test: two panics caught by a shield.
#[test]
fn panic_child_panics_twice() {
    if std::env::var_os(config::hooks::PANIC.name).is_none() {
        return;
    }
    diag::quiet_panics();
    for _ in 0..2 {
        let _ = std::panic::catch_unwind(|| panic!("a bug in a hook"));
    }
}

/// A panic inside gputrace's code prints one `[gputrace]` line into the
/// application's stderr, never Rust's report.
#[test]
fn a_caught_panic_is_one_line_on_stderr() {
    let err = panicking_child("tests::panic_child_panics_twice");
    let ours: Vec<&str> = err.lines().filter(|l| l.starts_with("[gputrace]")).collect();
    assert_eq!(ours.len(), 1, "{err}");
    assert!(ours[0].contains("internal error in the tracer"), "{err}");
    assert!(!err.contains("panicked at"), "Rust's report leaked: {err}");
}

#[test]
fn a_prepared_thread_records_into_the_slot_it_opened() {
    let dir = tempfile::tempdir().unwrap();
    let rec = recorder(dir.path(), 256 << 10);
    let region = rec.region("r", None, Paradigm::User, RegionRole::Function, "").unwrap();
    rec.prepare_thread();
    rec.prepare_thread();
    let size = std::fs::metadata(rec.path()).unwrap().len();
    rec.record(1, &Event::Enter { region });
    rec.record(2, &Event::Leave { region });
    // The slot (and the definitions) were there before the first event.
    assert_eq!(std::fs::metadata(rec.path()).unwrap().len(), size);
    rec.finish();
    let raw = RawFile::open(rec.path()).unwrap();
    assert!(raw.problems.is_empty(), "{:?}", raw.problems);
    let events = all_events(&raw);
    assert_eq!(
        events.iter().map(|e| (e.1, e.2)).collect::<Vec<_>>(),
        [(1, Event::Enter { region }), (2, Event::Leave { region })]
    );
}

#[test]
fn an_untraced_stream_holds_only_why_and_its_end() {
    let dir = tempfile::tempdir().unwrap();
    let pairs = [("GPUTRACE_EXPERIMENT_DIRECTORY".to_string(), dir.path().display().to_string())];
    let config = config::Config::from_pairs(&pairs).unwrap();
    record_untraced(Producer::Cuda, &config, "CUPTI could not be loaded: no libcupti.so");
    let files: Vec<_> = std::fs::read_dir(dir.path().join("raw")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let raw = RawFile::open(&files[0]).unwrap();
    assert_eq!(raw.header.producer, Producer::Cuda);
    assert!(raw.chunks.is_empty() && raw.problems.is_empty(), "{:?}", raw.problems);
    let untraced: Vec<_> = raw.definitions.iter().filter(|d| matches!(d, Definition::Untraced { .. })).collect();
    assert_eq!(
        untraced,
        [&Definition::Untraced { reason: "CUPTI could not be loaded: no libcupti.so".into() }],
        "{:?}",
        raw.definitions
    );
    assert!(raw.definitions.iter().any(|d| matches!(d, Definition::StreamEnd { .. })));
    assert!(!raw.definitions.iter().any(|d| matches!(d, Definition::Location { .. })));
}

/// The child's part of the host map tests: one stream in the experiment
/// directory its environment names, with the timer the clock chose.
#[test]
fn host_map_child_records() {
    let Some(dir) = std::env::var_os(config::hooks::HOST_MAP.name) else { return };
    let rec = recorder(Path::new(&dir), 256 << 10);
    rec.finish();
}

/// A process started without the `gputrace` command but with an
/// experiment directory (a rank on another host) reads the TSC through
/// its host's map file: the first publishes it, the next reads the same;
/// a map file it cannot trust is one warning line and clock_gettime.
#[test]
fn processes_without_the_command_share_the_hosts_map() {
    let dir = tempfile::tempdir().unwrap();
    let exp = dir.path().join("exp");
    let run = |exp: &Path| {
        let mut child = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "tests::host_map_child_records", "--nocapture", "--test-threads=1"])
            .env(config::hooks::HOST_MAP.name, exp)
            .env("GPUTRACE_EXPERIMENT_DIRECTORY", exp)
            .env_remove(gputrace_clock::CALIBRATION_VARIABLE)
            .env_remove(gputrace_clock::TIMER_VARIABLE)
            .stderr(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Never a hang, whatever the map file is.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while child.try_wait().unwrap().is_none() {
            if std::time::Instant::now() > deadline {
                child.kill().unwrap();
                panic!("the child hung");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        let mut timers = Vec::new();
        for e in std::fs::read_dir(exp.join("raw")).unwrap() {
            let path = e.unwrap().path();
            if path.extension().is_some_and(|x| x == "gtr") {
                let raw = RawFile::open(&path).unwrap();
                let timer = raw.definitions.iter().find_map(|d| match d {
                    Definition::Timer(t) => Some(*t),
                    _ => None,
                });
                timers.push(timer.unwrap());
                std::fs::remove_file(&path).unwrap();
            }
        }
        assert_eq!(timers.len(), 1, "{err}");
        (timers[0], err)
    };
    let map_file = exp.join("raw").join(gputrace_clock::host_map::file_name(gputrace_clock::domain()));
    let (first, err) = run(&exp);
    assert!(!err.contains("[gputrace]"), "{err}");
    if !gputrace_clock::tsc_usable() {
        assert_eq!(first, gputrace_clock::Timer::ClockGettime);
        return;
    }
    assert!(
        matches!(first, gputrace_clock::Timer::Tsc { source: gputrace_clock::MapSource::HostFile, .. }),
        "{first:?}"
    );
    assert!(map_file.is_file());
    let (second, err) = run(&exp);
    assert!(!err.contains("[gputrace]"), "{err}");
    assert_eq!(second, first, "the second process read the first's map");

    // A FIFO where the map should be: one line, clock_gettime, no hang.
    let exp = dir.path().join("exp-fifo");
    std::fs::create_dir_all(exp.join("raw")).unwrap();
    let fifo = exp.join("raw").join(gputrace_clock::host_map::file_name(gputrace_clock::domain()));
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let (timer, err) = run(&exp);
    assert_eq!(timer, gputrace_clock::Timer::ClockGettime);
    let ours: Vec<&str> = err.lines().filter(|l| l.starts_with("[gputrace]")).collect();
    assert_eq!(ours.len(), 1, "{err}");
    assert!(ours[0].contains("is a FIFO") && ours[0].contains("reads clock_gettime"), "{err}");
}

/// The stream's SourceLost totals, the last record of each kind.
fn source_lost(raw: &RawFile) -> Vec<(raw::SourceLoss, u64)> {
    let mut last = std::collections::BTreeMap::new();
    for d in &raw.definitions {
        if let Definition::SourceLost { what, count } = d {
            last.insert(*what, *count);
        }
    }
    last.into_iter().collect()
}

/// What the source lost is in the stream: written with the next
/// definitions (here the flusher's, within its period), as running
/// totals, and the last total at the close.
#[test]
fn source_losses_are_written_as_running_totals() {
    use raw::SourceLoss;
    let dir = tempfile::tempdir().unwrap();
    let rec = recorder(dir.path(), 256 << 10);
    rec.note_lost(SourceLoss::CuptiDropped, 1000);
    rec.note_lost(SourceLoss::CuptiDropped, 234);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let raw = RawFile::open(rec.path()).unwrap();
        if source_lost(&raw) == [(SourceLoss::CuptiDropped, 1234)] {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "not written while recording: {:?}", source_lost(&raw));
        std::thread::sleep(Duration::from_millis(20));
    }
    rec.note_lost(SourceLoss::CudaSyncWithoutCall, 3);
    rec.note_lost(SourceLoss::CuptiDropped, 1);
    rec.finish();
    let raw = RawFile::open(rec.path()).unwrap();
    assert_eq!(source_lost(&raw), [(SourceLoss::CuptiDropped, 1235), (SourceLoss::CudaSyncWithoutCall, 3)]);
    // Unchanged totals are not written again.
    let records = raw.definitions.iter().filter(|d| matches!(d, Definition::SourceLost { .. })).count();
    assert_eq!(records, 3);
}
