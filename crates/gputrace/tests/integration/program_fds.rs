//! A program that closes the descriptors it did not open (daemons and some
//! libraries close every one from 3 up) and then opens files of its own,
//! which get the freed numbers: gputrace must never write into them
//! (`tests/programs/mpi/closefds.c`, under Open MPI and MPICH). The
//! program's files are byte for byte those of its untraced run; the
//! stream file is opened again and the trace is whole; and where it
//! cannot be opened again (the program used up its open-file limit),
//! recording stops with what was lost counted and the ranks are said to
//! have finished.

use std::path::Path;

use crate::util::*;

const ITER: &str = "2000";

/// The program's own files in `dir`, by name.
fn program_files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).unwrap()))
        .collect();
    files.sort();
    files
}

/// Runs the program untraced and traced; checks its output and files are
/// the same; returns gputrace's stderr and the experiment directory.
fn traced_and_untraced(mpicc: &str, launcher: &str, limit: bool) -> (String, std::path::PathBuf) {
    let exe = compile(mpicc, "closefds.c");
    let np = if launcher.contains("mpich") { "-n" } else { "-np" };
    let mut runs = Vec::new();
    for traced in [false, true] {
        let files = fresh_dir("closefds-files");
        std::fs::create_dir(&files).unwrap();
        let mut argv: Vec<String> = vec![launcher.into(), np.into(), "2".into(), exe.display().to_string()];
        argv.extend(["-d".into(), files.display().to_string(), "-n".into(), ITER.into()]);
        if limit {
            argv.push("-l".into());
        }
        let dir = fresh_dir("closefds");
        let out = if traced {
            let args: Vec<&str> = argv.iter().map(String::as_str).collect();
            trace(&dir, &args, &[])
        } else {
            run(std::process::Command::new(&argv[0]).args(&argv[1..]))
        };
        assert!(out.status.success(), "traced {traced}: {}\n{}", text(&out.stdout), text(&out.stderr));
        runs.push((text(&out.stdout), text(&out.stderr), program_files(&files), dir));
    }
    let (untraced, traced) = (&runs[0], &runs[1]);
    assert!(untraced.0.contains("closefds: allreduce"), "{}", untraced.0);
    // Traced, each rank closed one more: its MPI stream.
    for rank in 0..2 {
        let closed = |stderr: &str| -> u32 {
            let line = format!("closefds: rank {rank} closed ");
            let at = stderr.find(&line).unwrap_or_else(|| panic!("no \"{line}\" in {stderr}"));
            stderr[at + line.len()..].split(' ').next().unwrap().parse().unwrap()
        };
        assert_eq!(closed(&traced.1), closed(&untraced.1) + 1, "rank {rank}");
    }
    assert_eq!(traced.0, untraced.0, "the program's output differs when traced");
    assert_eq!(traced.2.len(), 8, "{:?}", traced.2.iter().map(|f| &f.0).collect::<Vec<_>>());
    for ((name, theirs), (_, ours)) in untraced.2.iter().zip(&traced.2) {
        assert!(ours == theirs, "{name}: {} bytes traced, {} untraced", ours.len(), theirs.len());
    }
    (traced.1.clone(), traced.3.clone())
}

/// The summary's lines, without the tables.
fn summary(stderr: &str) -> Vec<&str> {
    stderr.lines().filter_map(|l| l.strip_prefix("[gputrace] ")).collect()
}

/// The stream file is opened again: the trace holds every call.
fn check_reopened(mpicc: &str, launcher: &str) {
    let (stderr, dir) = traced_and_untraced(mpicc, launcher, false);
    let lines = summary(&stderr);
    assert!(lines.iter().any(|l| l.starts_with("archive:")), "{stderr}");
    for word in ["ending:", "lost:", "warning:", "error:"] {
        assert!(!lines.iter().any(|l| l.starts_with(word)), "{word} in the summary:\n{stderr}");
    }
    let facts = facts(&dir.join("traces.otf2"));
    for rank in 0..2 {
        assert_eq!(count(&facts, rank, "MpiSend"), ITER.parse::<i64>().unwrap(), "rank {rank}");
        assert_eq!(count(&facts, rank, "MpiRecv"), ITER.parse::<i64>().unwrap(), "rank {rank}");
    }
}

/// The stream cannot be opened again: recording stops, the loss is
/// counted, and each rank finished.
fn check_stopped(mpicc: &str, launcher: &str) {
    let (stderr, _) = traced_and_untraced(mpicc, launcher, true);
    let lines = summary(&stderr);
    assert!(lines.iter().any(|l| l.starts_with("archive:")), "{stderr}");
    assert!(lines.iter().any(|l| l.starts_with("lost:") && l.contains("events could not be written")), "{stderr}");
    for rank in 0..2 {
        let ending = lines.iter().find(|l| l.starts_with(&format!("ending: rank {rank} "))).unwrap_or_else(|| {
            panic!("the summary does not say how rank {rank} ended:\n{stderr}");
        });
        assert!(ending.contains(" finished; ") && ending.contains(" events not written"), "{ending}");
        let count: String = ending.split(" finished; ").nth(1).unwrap().chars().take_while(|c| *c != ' ').collect();
        assert!(count.replace(',', "").parse::<u64>().unwrap() > 0, "{ending}");
    }
    assert!(!stderr.contains("without closing"), "{stderr}");
}

fn tools(mpi: &str) -> Option<(&'static str, &'static str)> {
    let (mpicc, launcher) = if mpi == "openmpi" {
        let (mpicc, mpirun, _) = openmpi();
        (mpicc, mpirun)
    } else {
        ("mpicc.mpich", "mpiexec.mpich")
    };
    [mpicc, launcher].iter().all(|t| required(t, have(t))).then_some((mpicc, launcher))
}

#[test]
fn a_program_closing_our_descriptor_keeps_its_files_and_the_trace_under_open_mpi() {
    if let Some((mpicc, launcher)) = tools("openmpi") {
        check_reopened(mpicc, launcher);
    }
}

#[test]
fn a_program_closing_our_descriptor_keeps_its_files_and_the_trace_under_mpich() {
    if let Some((mpicc, launcher)) = tools("mpich") {
        check_reopened(mpicc, launcher);
    }
}

#[test]
fn a_descriptor_that_cannot_be_opened_again_stops_recording_counted_under_open_mpi() {
    if let Some((mpicc, launcher)) = tools("openmpi") {
        check_stopped(mpicc, launcher);
    }
}

#[test]
fn a_descriptor_that_cannot_be_opened_again_stops_recording_counted_under_mpich() {
    if let Some((mpicc, launcher)) = tools("mpich") {
        check_stopped(mpicc, launcher);
    }
}
