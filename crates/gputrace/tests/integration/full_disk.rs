//! A disk that fills while the archive is written: at every fill level,
//! one line naming the disk, never a crash (libotf2 itself crashes on a
//! failed write, hence the merge in a worker process), the half-written
//! archive removed, the raw streams intact and merging later elsewhere.
//! A disk with no inode left: the run's last line says the trace could
//! not be written and why, not that the program did nothing.

use std::path::Path;

use crate::util::*;

/// The traced program: rank 1 exits with 3 after `ITERATIONS` messages.
const ITERATIONS: &str = "50000";

/// A reference run on the big disk: its experiment directory and the
/// size of its archive.
fn reference() -> (std::path::PathBuf, u64) {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "exit3.c");
    let dir = fresh_dir("fullref");
    let out = trace(&dir, &[mpirun, "-np", "2", exe.to_str().unwrap(), "-n", ITERATIONS], &[KEEP_RAW]);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let archive = tree_size(&dir.join("traces")) + tree_size(&dir.join("traces.def"));
    assert!(archive > 2 << 20, "the archive must be larger than OTF2's buffers: {archive}");
    (dir, archive)
}

/// Makes the free space of `disk` about `free` bytes with a fill file.
fn fill_to(disk: &Tmpfs, free: u64) {
    let fill = disk.0.join("fill");
    let _ = std::fs::remove_file(&fill);
    let avail = disk.avail();
    if avail > free {
        std::fs::write(&fill, vec![0u8; (avail - free) as usize]).unwrap();
    }
}

/// The only `[gputrace]`/`gputrace:` line of a run that failed for the
/// disk: it names the disk and says what was kept.
fn assert_disk_line(stderr: &str, disk: &Path, experiment: &Path) {
    // Warnings about the raw streams aside (a rank killed by the launcher
    // may leave its last chunk cut short), one line, and no summary.
    let ours: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("[gputrace]") || l.starts_with("gputrace:"))
        .filter(|l| !l.starts_with("[gputrace] warning: "))
        .collect();
    assert_eq!(ours.len(), 1, "one line: {stderr}");
    let line = ours[0];
    assert!(line.contains(&format!("the disk mounted at {} is full", disk.display())), "{line}");
    assert!(line.contains("the half-written archive was removed"), "{line}");
    assert!(line.contains(&format!("`gputrace merge {}` tries again", experiment.display())), "{line}");
    assert!(!stderr.contains("double free") && !stderr.contains("Segmentation"), "{stderr}");
}

#[test]
fn a_disk_full_while_merging_is_one_line_at_every_fill_level() {
    let (reference, archive) = reference();
    let want = seen(&reference.join("traces.otf2"));
    let raw = tree_size(&reference.join("raw"));
    let Some(disk) = Tmpfs::mount((raw + archive + (4 << 20)) / 1024) else { return };
    let exp = disk.0.join("exp");
    // Free space for the archive, in percent of what it needs; the last
    // level has room, so the same merge on the same disk must succeed.
    for percent in [0, 3, 10, 25, 40, 55, 70, 85, 95, 150] {
        let _ = std::fs::remove_dir_all(&exp);
        let _ = std::fs::remove_file(disk.0.join("fill"));
        copy_dir(&reference.join("raw"), &exp.join("raw"));
        fill_to(&disk, archive * percent / 100);
        let out = merge(&exp, false);
        let err = text(&out.stderr);
        if percent > 100 {
            assert_eq!(out.status.code(), Some(0), "{percent}%: {err}");
            assert_eq!(seen(&exp.join("traces.otf2")), want, "{percent}%");
            continue;
        }
        assert_eq!(out.status.code(), Some(1), "{percent}% of the space needed: {err}");
        assert_disk_line(&err, &disk.0, &exp);
        assert_no_archive(&exp);
        for e in std::fs::read_dir(reference.join("raw")).unwrap() {
            let e = e.unwrap();
            let kept = std::fs::read(exp.join("raw").join(e.file_name())).unwrap();
            assert!(kept == std::fs::read(e.path()).unwrap(), "{percent}%: raw stream {:?} changed", e.file_name());
        }
        // The raw streams kept merge elsewhere into the same archive.
        let elsewhere = fresh_dir("fullmoved");
        copy_dir(&exp.join("raw"), &elsewhere.join("raw"));
        let out = merge(&elsewhere, false);
        assert!(out.status.success(), "{percent}%: {}", text(&out.stderr));
        assert_eq!(seen(&elsewhere.join("traces.otf2")), want, "{percent}%");
    }
}

#[test]
fn a_disk_full_at_the_merge_after_a_run_keeps_the_programs_exit_code() {
    let (reference, archive) = reference();
    let raw = tree_size(&reference.join("raw"));
    let Some(disk) = Tmpfs::mount((raw + archive + (4 << 20)) / 1024) else { return };
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "exit3.c");
    for percent in [5, 30, 60] {
        let exp = disk.0.join(format!("run{percent}"));
        let _ = std::fs::remove_file(disk.0.join("fill"));
        // Room for the raw streams (with a margin), not for the archive.
        fill_to(&disk, raw + (256 << 10) + archive * percent / 100);
        let out = trace(&exp, &[mpirun, "-np", "2", exe.to_str().unwrap(), "-n", ITERATIONS], &[]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "the program's exit code: {err}");
        assert!(text(&out.stdout).contains(&format!("exit3: {ITERATIONS} messages")), "{}", text(&out.stdout));
        assert!(!err.contains("No space left"), "the raw streams fit: {err}");
        assert_disk_line(&err, &disk.0, &exp);
        assert_no_archive(&exp);
        // What the run recorded merges elsewhere: every message rank 1
        // received before it exited (rank 0, stopped by the launcher then,
        // is another issue's business).
        let elsewhere = fresh_dir("fullrunmoved");
        copy_dir(&exp.join("raw"), &elsewhere.join("raw"));
        std::fs::remove_dir_all(&exp).unwrap();
        let out = merge(&elsewhere, false);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let f = facts(&elsewhere.join("traces.otf2"));
        assert_well_formed(&f);
        let recvs = messages(&f, "recvs");
        assert_eq!(recvs.len(), ITERATIONS.parse::<usize>().unwrap());
    }
}

#[test]
fn no_inode_left_says_the_trace_could_not_be_written() {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile_file(mpicc, &workspace().join("examples/mpi_ring.c"));
    // Three inodes: the disk's root, the experiment directory and its
    // raw/; no rank can create its stream.
    let Some(disk) = Tmpfs::mount_inodes(64 << 10, 3) else { return };
    let exp = disk.0.join("exp");
    let out = trace(&exp, &[mpirun, "-np", "2", exe.to_str().unwrap(), "10"], &[]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "the program's exit code: {err}");
    assert!(text(&out.stdout).contains("ring: 2 ranks"), "the program ran: {}", text(&out.stdout));
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("cannot create a mpi stream")).collect();
    assert_eq!(warnings.len(), 2, "each rank says it: {err}");
    let last = err.lines().last().unwrap_or_default();
    assert!(!err.contains("made no MPI call"), "{err}");
    assert!(
        last.starts_with("[gputrace] error: the trace could not be written: no raw stream could be created in ")
            && last.contains(&format!("the disk mounted at {} has no free inodes left", disk.0.display())),
        "{err}"
    );

    // The merge on a disk whose inodes run out while it writes the archive
    // says so too (not "is full" with all its space free): libotf2's cause
    // (ENOSPC, under INTEGRITY_FAULT) is kept in its error.
    let (job, _) = synthetic_job("inodes", 2, 20, (0, 0));
    let streams = std::fs::read_dir(job.join("raw")).unwrap().count() as u64;
    // Root, exp, raw, the streams, and two more: the archive needs more.
    let Some(disk) = Tmpfs::mount_inodes(64 << 10, 3 + streams + 2) else { return };
    let exp = disk.0.join("exp");
    copy_dir(&job.join("raw"), &exp.join("raw"));
    let out = merge(&exp, false);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("the disk mounted at {} has no free inodes left", disk.0.display())), "{err}");
    assert_no_archive(&exp);
}

/// A disk with room for some ranks' streams and not others': the ranks
/// that record and the ones that cannot still meet in the clock
/// synchronizations at `MPI_Init` and `MPI_Finalize`, which are
/// collective (a rank that skipped them left the others waiting for ever).
#[test]
fn ranks_that_cannot_record_still_join_the_clock_synchronization() {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile_file(mpicc, &workspace().join("examples/mpi_ring.c"));
    let mut partial = 0;
    // Root, exp, raw, then one stream or two (which rank gets the inode
    // is a race): some of these leave one rank without its stream.
    for inodes in 4..=6 {
        let Some(disk) = Tmpfs::mount_inodes(64 << 10, inodes) else { return };
        let exp = disk.0.join("exp");
        let mut cmd = std::process::Command::new(gputrace());
        cmd.arg("-o").arg(&exp).args([mpirun, "-np", "3", exe.to_str().unwrap(), "10"]);
        cmd.env("OMPI_MCA_rmaps_base_oversubscribe", "1");
        let out = run_within(&mut cmd, std::time::Duration::from_secs(60));
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{inodes} inodes: {err}");
        assert!(text(&out.stdout).contains("ring: 3 ranks"), "{inodes} inodes: {}", text(&out.stdout));
        let failed = err.lines().filter(|l| l.contains("cannot create a mpi stream")).count();
        if failed > 0 && failed < 3 {
            partial += 1;
        }
    }
    assert!(partial > 0, "no run left some ranks without a stream and others with one");
}
