use super::*;

fn ring(iterations: u64) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let raw = tmp.path().join("raw");
    std::fs::create_dir(&raw).unwrap();
    raw::synthetic::write_ring(&raw, 2, iterations).unwrap();
    (tmp, raw)
}

fn events(processes: &[Process]) -> u64 {
    processes
        .iter()
        .flat_map(|p| p.streams.iter().flat_map(|s| s.chunks.iter().map(|c| u64::from(c.header.event_count))))
        .sum()
}

#[test]
fn only_regular_files_are_streams() {
    let (_tmp, raw) = ring(100);
    let Loaded { warnings: want, .. } = load(&raw).unwrap();
    assert!(want.is_empty(), "{want:?}");
    let fifo = raw.join("fifo.gtr");
    let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    std::os::unix::fs::symlink("fifo.gtr", raw.join("link.gtr")).unwrap();
    std::os::unix::fs::symlink("missing.gtr", raw.join("dangling.gtr")).unwrap();
    std::fs::create_dir(raw.join("dir.gtr")).unwrap();
    // Opening the FIFO would block this test for ever.
    let Loaded { processes, warnings, .. } = load(&raw).unwrap();
    assert_eq!(processes.len(), 2);
    let w = warnings.join("\n");
    assert_eq!(warnings.len(), 4, "{w}");
    assert!(w.contains("fifo.gtr is a FIFO, not a raw stream; skipped"), "{w}");
    assert!(w.contains("link.gtr is a link to a FIFO"), "{w}");
    assert!(w.contains("dir.gtr is a directory"), "{w}");
    assert!(w.contains("dangling.gtr is unreadable"), "{w}");
}

#[test]
fn a_copied_stream_is_merged_once() {
    let (_tmp, raw) = ring(100_000);
    let Loaded { processes, .. } = load(&raw).unwrap();
    let whole = events(&processes);
    let original = raw.join(stream_file_name("synthetic", 1, raw::Producer::Synthetic));
    let bytes = std::fs::read(&original).unwrap();
    assert!(processes[0].streams[0].chunks.len() > 2, "the stream must have several chunks");
    // A whole copy (sorting before the original) and one cut short.
    std::fs::write(raw.join("a-copy.gtr"), &bytes).unwrap();
    std::fs::write(raw.join("z-cut.gtr"), &bytes[..bytes.len() / 2]).unwrap();
    let Loaded { processes, warnings, .. } = load(&raw).unwrap();
    assert_eq!(processes.len(), 2);
    assert!(processes.iter().all(|p| p.streams.len() == 1));
    assert_eq!(events(&processes), whole, "events merged once");
    // The original name is the one kept.
    assert_eq!(processes[0].streams[0].path(), original);
    let copies: Vec<_> = warnings.iter().filter(|w| w.contains("is a copy of")).collect();
    assert_eq!(copies.len(), 2, "{warnings:?}");
    assert!(copies.iter().all(|w| w.contains("the synthetic stream of pid 1 on synthetic): merged once")));
}

#[test]
fn two_different_streams_of_one_identity_are_not_both_merged() {
    let (_tmp, raw) = ring(100_000);
    let Loaded { processes, .. } = load(&raw).unwrap();
    let whole = events(&processes);
    // The same process identity with other events: a shorter run,
    // whose last chunks differ.
    let (_other_tmp, other_raw) = ring(60_000);
    let name = stream_file_name("synthetic", 1, raw::Producer::Synthetic);
    std::fs::copy(other_raw.join(&name), raw.join("other.gtr")).unwrap();
    let Loaded { processes, warnings, .. } = load(&raw).unwrap();
    assert!(processes.iter().all(|p| p.streams.len() == 1));
    assert_eq!(events(&processes), whole, "the longer one is kept");
    assert!(warnings.iter().any(|w| w.contains("but differ: only the first is merged")), "{warnings:?}");
}

#[test]
fn a_process_that_only_says_why_it_recorded_nothing_is_a_fact_not_a_process() {
    let (_tmp, raw) = ring(100);
    let header = raw::StreamHeader {
        producer: raw::Producer::Cuda,
        host: "synthetic".into(),
        pid: 9,
        process_start: 2000,
        clock_domain: 42,
        monotonic_ns: 1_000_000_000,
        realtime_ns: 1_700_000_000_000_000_000,
        rank_hint: None,
        command: vec!["cuda-program".into()],
    };
    let file = raw::StreamFile::create(&raw.join(stream_file_name(&header.host, 9, header.producer)), &header).unwrap();
    let mut defs = Vec::new();
    Definition::Untraced { reason: "CUPTI could not be loaded: x".into() }.encode(&mut defs);
    Definition::StreamEnd { time: 2, exit_started: 1 }.encode(&mut defs);
    file.write_chunk(raw::ChunkKind::Definitions, None, &defs).unwrap();
    drop(file);
    // A host's TSC map beside the streams: not a stream, not a warning.
    std::fs::write(raw.join(gputrace_clock::host_map::file_name(7)), "gputrace-tsc-map\n").unwrap();
    let Loaded { processes, not_traced, warnings } = load(&raw).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(processes.len(), 2, "the ring's two processes, no third");
    assert_eq!(
        not_traced,
        [NotTraced { what: Producer::Cuda, why: "CUPTI could not be loaded: x".into(), processes: 1 }]
    );
    remove_untraced_only(&raw);
    assert_eq!(std::fs::read_dir(&raw).unwrap().count(), 2, "the ring's streams stay, the fact and the map go");
}

#[test]
fn what_sources_lost_is_summed_per_process_and_kind() {
    let (_tmp, raw) = ring(100);
    let stream = |producer, records: &[Definition]| {
        let header = raw::StreamHeader {
            producer,
            host: "synthetic".into(),
            pid: 9,
            process_start: 2000,
            clock_domain: 42,
            monotonic_ns: 1_000_000_000,
            realtime_ns: 1_700_000_000_000_000_000,
            rank_hint: None,
            command: vec!["cuda-program".into()],
        };
        let path = raw.join(stream_file_name(&header.host, 9, producer));
        let file = raw::StreamFile::create(&path, &header).unwrap();
        let mut defs = Vec::new();
        for r in records {
            r.encode(&mut defs);
        }
        Definition::StreamEnd { time: 2, exit_started: 1 }.encode(&mut defs);
        file.write_chunk(raw::ChunkKind::Definitions, None, &defs).unwrap();
    };
    let lost = |what, count| Definition::SourceLost { what, count };
    // Running totals: the last (largest) of a stream counts.
    stream(
        raw::Producer::Cuda,
        &[
            lost(SourceLoss::CuptiDropped, 10),
            lost(SourceLoss::CudaSyncWithoutCall, 0),
            lost(SourceLoss::CuptiDropped, 25),
        ],
    );
    stream(raw::Producer::Nccl, &[lost(SourceLoss::NcclThreadExit, 2), lost(SourceLoss::Other(77), 1)]);
    let Loaded { processes, .. } = load(&raw).unwrap();
    let p = processes.iter().find(|p| p.pid == 9).unwrap();
    let expected =
        BTreeMap::from([(SourceLoss::CuptiDropped, 25), (SourceLoss::NcclThreadExit, 2), (SourceLoss::Other(77), 1)]);
    assert_eq!(p.lost, expected);
    assert!(processes.iter().filter(|p| p.pid != 9).all(|p| p.lost.is_empty()));
    assert_eq!(p.ending(), None, "losses of the sources are no way of ending");
}
