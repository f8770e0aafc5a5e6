//! The integration tests, written once for both MPI flavours: each runs
//! one test program of `tests/programs/mpi` traced and untraced and checks
//! the raw streams against what the program did.

use raw::{CollectiveOp, Event};

use super::checks::{self, counts};
use std::path::Path;
use std::process::Command;

use super::{Flavour, Trace, assert_success, programs_dir, stdout, summary};

/// p2p.c: counts per rank as the program reports them, every message
/// matched (ANY_SOURCE receives included), nothing for MPI_PROC_NULL.
pub fn p2p(f: &Flavour, np: usize) {
    let (trace, out) = f.traced("p2p.c", np, &["-n", "2"], &[]);
    check_p2p(&trace, &out, np);
}

fn check_p2p(trace: &Trace, out: &str, np: usize) {
    checks::well_formed(trace);
    checks::messages_match(trace);
    let sum = summary(out);
    for s in &trace.streams {
        let want = &sum[&s.rank];
        assert_eq!(want["errors"], 0);
        let c = counts(s);
        assert_eq!(c.sends, want["sends"], "rank {} sends", s.rank);
        assert_eq!(c.recvs, want["recvs"], "rank {} recvs", s.rank);
        assert_eq!(c.bytes_sent, want["bytes_sent"], "rank {}", s.rank);
        assert_eq!(c.bytes_recv, want["bytes_recv"], "rank {}", s.rank);
        // 2 iterations x one MPI_Send to MPI_PROC_NULL, entered, no event.
        assert!(s.entered("MPI_Send") > 0 && s.entered("MPI_Bsend") > 0);
        assert_eq!(s.entered("MPI_Sendrecv_replace") as i64, 2 * (np as i64 - 1));
        assert_eq!(s.clock_syncs.len(), 2, "init and finalize");
        assert!(s.clock_syncs.iter().all(|&(_, o, e)| o == 0 && e == 0));
        let (name, group) = s.regions.values().find(|(n, _)| n == "MPI_Send").unwrap();
        assert_eq!((name.as_str(), group.as_str()), ("MPI_Send", "p2p"));
    }
}

/// nonblocking.c: every request followed to completion, counts as
/// reported, persistent requests once per start.
pub fn nonblocking(f: &Flavour, np: usize) {
    let (trace, out) = f.traced("nonblocking.c", np, &["-n", "2"], &[]);
    checks::well_formed(&trace);
    checks::messages_match(&trace);
    let sum = summary(&out);
    for s in &trace.streams {
        let want = &sum[&s.rank];
        let c = counts(s);
        assert_eq!(c.isends, want["isends"] + want["persistent_sends"], "rank {}", s.rank);
        assert_eq!(c.irecvs, want["irecvs"] + want["persistent_recvs"], "rank {}", s.rank);
        assert_eq!(c.bytes_sent, want["bytes_sent"]);
        assert_eq!(c.bytes_recv, want["bytes_recv"]);
        assert_eq!((c.sends, c.recvs), (0, 0));
        let completes = s.count(|e| matches!(e, Event::MpiIsendComplete { .. }));
        assert_eq!(completes as i64, c.isends);
    }
}

/// The bytes collectives.c moves in one `run` on a communicator of `n`
/// processes where this one is `me`: (op, root, sent, received), in call
/// order, blocking then non-blocking.
fn expected_run(n: u64, me: u64, root: u64) -> Vec<(CollectiveOp, Option<u32>, u64, u64)> {
    use CollectiveOp::*;
    let is_root = me == root;
    let r = Some(root as u32);
    let total: u64 = (1..=n).sum::<u64>() * 4;
    let mine = (me + 1) * 4;
    let rooted = |op, root_bytes: (u64, u64), other: (u64, u64)| {
        let (s, v) = if is_root { root_bytes } else { other };
        (op, r, s, v)
    };
    vec![
        (Barrier, None, 0, 0),
        rooted(Bcast, (n * 256, 256), (0, 256)),
        rooted(Reduce, (256, n * 256), (256, 0)),
        (Allreduce, None, n * 256, n * 256),
        rooted(Gather, (32, n * 32), (32, 0)),
        rooted(Gatherv, (mine, total), (mine, 0)),
        rooted(Scatter, (n * 16, 16), (0, 16)),
        rooted(Scatterv, (total, mine), (0, mine)),
        (Allgather, None, n * 8, n * 8),
        (Allgatherv, None, n * mine, total),
        (Alltoall, None, n * 4, n * 4),
        (Alltoallv, None, n * mine, total),
        (ReduceScatterBlock, None, n * 8, n * 8),
        (ReduceScatter, None, total, n * mine),
        (Scan, None, (n - me) * 12, (me + 1) * 12),
        (Exscan, None, (n - me - 1) * 12, me * 12),
        (Allreduce, None, (n - 1) * 20, (n - 1) * 20),
        (Barrier, None, 0, 0),
        rooted(Bcast, (n * 40, 40), (0, 40)),
        (Allreduce, None, n * 28, n * 28),
        rooted(Gather, (12, n * 12), (12, 0)),
    ]
}

/// collectives.c: every collective's op, root and bytes as
/// `docs/mpi.md` defines them, on the world and a split communicator.
pub fn collectives(f: &Flavour, np: usize) {
    let iters = 2;
    let (trace, _) = f.traced("collectives.c", np, &["-n", "2"], &[]);
    checks::well_formed(&trace);
    let np = np as u64;
    for s in &trace.streams {
        let rank = u64::from(s.rank);
        // The split communicator: same parity, ordered by descending rank.
        let half: Vec<u64> = (0..np).rev().filter(|r| r % 2 == rank % 2).collect();
        let me_half = half.iter().position(|&r| r == rank).unwrap() as u64;
        let mut want = Vec::new();
        for it in 0..iters {
            for (key_is_world, n, me, root) in
                [(true, np, rank, (it + 1) % np), (false, half.len() as u64, me_half, it % half.len() as u64)]
            {
                for w in expected_run(n, me, root) {
                    want.push((key_is_world, w));
                }
            }
        }
        let got: Vec<_> = s
            .events
            .iter()
            .filter_map(|(_, _, e)| match e {
                Event::MpiCollectiveEnd(c) | Event::NonBlockingCollectiveComplete { coll: c, .. } => Some(*c),
                _ => None,
            })
            // The summary's gather at the end is the program's own.
            .take(want.len())
            .collect();
        assert_eq!(got.len(), want.len(), "rank {rank}: number of collectives");
        for (i, (c, (world, (op, root, sent, recv)))) in got.iter().zip(&want).enumerate() {
            let key = s.comm_key(c.comm);
            assert_eq!(key == (0, 0), *world, "rank {rank} call {i}: communicator");
            assert_eq!((c.op, c.root, c.sent, c.received), (*op, *root, *sent, *recv), "rank {rank} call {i} ({op:?})");
            if !world {
                let members: Vec<u32> = raw::defs::expand_runs(&s.comms[&c.comm].members).collect();
                let half32: Vec<u32> = half.iter().map(|&r| r as u32).collect();
                assert_eq!(members, half32, "split communicator members");
            }
        }
        let begins = s.count(|e| matches!(e, Event::MpiCollectiveBegin));
        let ends = s.count(|e| matches!(e, Event::MpiCollectiveEnd(_)));
        assert_eq!(begins, ends);
    }
    // Every member agrees on the split communicators' keys.
    let mut keys = std::collections::HashSet::new();
    for s in &trace.streams {
        for c in s.comms.values() {
            if c.key != (0, 0) && c.key.1 != u64::MAX {
                keys.insert((c.key, c.members.clone()));
            }
        }
    }
    let distinct: std::collections::HashSet<_> = keys.iter().map(|(k, _)| *k).collect();
    assert_eq!(distinct.len(), keys.len(), "one member list per key: {keys:?}");
}

/// threads.c: each thread records into its own location, on its own tag.
pub fn threads(f: &Flavour, np: usize) {
    let (trace, out) = f.traced("threads.c", np, &["-n", "10"], &[]);
    checks::well_formed(&trace);
    checks::messages_match(&trace);
    let sum = summary(&out);
    for s in &trace.streams {
        let mut tags_by_location = std::collections::HashMap::<u32, Vec<i32>>::new();
        for (loc, _, e) in &s.events {
            if let Event::MpiSend(m) = e {
                tags_by_location.entry(*loc).or_default().push(m.tag);
            }
        }
        assert_eq!(tags_by_location.len(), 4, "rank {}: one location per thread", s.rank);
        let mut tags: Vec<i32> = tags_by_location
            .values()
            .map(|t| {
                assert!(t.iter().all(|x| *x == t[0]));
                t[0]
            })
            .collect();
        tags.sort();
        assert_eq!(tags, [0, 1, 2, 3]);
        assert_eq!(counts(s).sends, sum[&s.rank]["sends"]);
    }
}

/// A Fortran program: its calls are recorded like C's.
pub fn fortran(f: &Flavour, program: &str, np: usize) {
    let (trace, out) = f.traced(program, np, &[], &[]);
    checks::well_formed(&trace);
    checks::messages_match(&trace);
    let sum = summary(&out);
    for s in &trace.streams {
        let want = &sum[&s.rank];
        let c = counts(s);
        assert_eq!(c.sends, want["sends"], "rank {}", s.rank);
        assert_eq!(c.recvs, want["recvs"], "rank {}", s.rank);
        assert_eq!(c.isends, want["isends"], "rank {}", s.rank);
        assert_eq!(c.irecvs, want["irecvs"], "rank {}", s.rank);
        let colls = s.count(|e| matches!(e, Event::MpiCollectiveEnd(_)));
        assert!(colls as i64 >= want["collectives"], "rank {}: {colls} collectives", s.rank);
        assert_eq!(s.entered("MPI_Init") + s.entered("MPI_Init_thread"), 1);
        for name in ["MPI_Comm_split", "MPI_Comm_dup", "MPI_Comm_free", "MPI_Allreduce", "MPI_Finalize"] {
            assert!(s.entered(name) > 0, "rank {}: {name} not recorded", s.rank);
        }
        // World, self, the split and the duplicate.
        assert!(s.comms.len() >= 4, "rank {}: {:?}", s.rank, s.comms);
    }
}

/// Clock synchronization with every rank pretending to be on its own
/// host: the offsets are measured and, the clock being one, within the
/// measurement's error of zero.
pub fn clock_sync(f: &Flavour) {
    let env = [(config::hooks::CLOCK_DOMAIN.name, "rank%2")];
    let (trace, _) = f.traced("p2p.c", 3, &["-n", "1"], &env);
    for s in &trace.streams {
        assert_eq!(s.clock_syncs.len(), 2);
        for &(local, offset, error) in &s.clock_syncs {
            assert!(local > 0);
            if s.rank % 2 == 0 {
                assert_eq!((offset, error), (0, 0), "rank {} shares rank 0's clock", s.rank);
            } else {
                assert!(error > 0, "rank {}: measured", s.rank);
                assert!(offset.unsigned_abs() <= error, "rank {}: offset {offset} error {error}", s.rank);
            }
        }
    }
}

/// Groups switched off, a filter: calls still work, messages recorded
/// only where documented.
pub fn groups_and_filter(f: &Flavour) {
    let (trace, _) = f.traced("p2p.c", 2, &["-n", "1"], &[("GPUTRACE_MPI_ENABLE_GROUPS", "none")]);
    for s in &trace.streams {
        assert!(s.events.is_empty(), "rank {}: {:?}", s.rank, &s.events[..3.min(s.events.len())]);
        assert!(s.comms.len() >= 2, "communicators are tracked anyway");
    }
    let (trace, _) = f.traced("nonblocking.c", 2, &["-n", "1"], &[("GPUTRACE_MPI_ENABLE_GROUPS", "p2p")]);
    for s in &trace.streams {
        assert!(s.entered("MPI_Isend") > 0);
        assert_eq!(s.count(|e| matches!(e, Event::MpiIsend { .. } | Event::MpiIrecv { .. })), 0);
    }
    let dir = tempfile::tempdir().unwrap();
    let filter = dir.path().join("filter");
    std::fs::write(&filter, "SCOREP_REGION_NAMES_BEGIN\n  EXCLUDE MPI_Send MPI_Recv\nSCOREP_REGION_NAMES_END\n")
        .unwrap();
    let filter = filter.display().to_string();
    let (trace, _) = f.traced("p2p.c", 2, &["-n", "1"], &[("GPUTRACE_FILTERING_FILE", &filter)]);
    checks::well_formed(&trace);
    checks::messages_match(&trace);
    for s in &trace.streams {
        assert_eq!(s.entered("MPI_Send") + s.entered("MPI_Recv"), 0);
        assert!(counts(s).sends > 0, "filtered regions keep their messages");
    }
}

/// The program's own lines of a failed run's stdout: launchers add
/// banners about the failure there (Hydra), in an order that depends on
/// which process it sees end first.
fn own_lines(o: &std::process::Output, program: &str) -> Vec<String> {
    stdout(o).lines().filter(|l| l.starts_with(&format!("{program}:"))).map(str::to_string).collect()
}

/// exit3.c: the same exit status traced and untraced, and a complete
/// stream for the rank that exited.
pub fn exit3(f: &Flavour) {
    let exe = f.compile("exit3.c");
    let plain = f.run(&exe, 2, &["-n", "4"], None, &[]);
    let dir = tempfile::tempdir().unwrap();
    let traced = f.run(&exe, 2, &["-n", "4"], Some(dir.path()), &[]);
    assert!(!plain.status.success());
    // Hydra reports whichever end it sees first: the rank's 3, the SIGKILL
    // (9) it sends the others, or now and then 1; under load any of them,
    // with or without tracing (seen untraced: 1, traced: 3). Open MPI's
    // mpirun always reports the 3.
    let code = |o: &std::process::Output| o.status.code().map(|c| if c == 9 || c == 1 { 3 } else { c });
    assert_eq!(code(&plain), code(&traced));
    assert_eq!(own_lines(&plain, "exit3"), own_lines(&traced, "exit3"));
    let trace = Trace::load(dir.path());
    let s = trace.rank(1);
    assert!(s.ended, "the exit handler finished the stream");
    assert_eq!(counts(s).recvs, 4);
    checks::balanced(s);
}

/// killself.c: what the killed rank wrote before is salvaged.
pub fn killself(f: &Flavour) {
    let exe = f.compile("killself.c");
    let plain = f.run(&exe, 2, &["-n", "4"], None, &[]);
    let dir = tempfile::tempdir().unwrap();
    let traced = f.run(&exe, 2, &["-n", "4"], Some(dir.path()), &[]);
    assert!(!plain.status.success());
    assert_eq!(plain.status.success(), traced.status.success());
    assert_eq!(own_lines(&plain, "killself"), own_lines(&traced, "killself"));
    let trace = Trace::load(dir.path());
    let s = trace.rank(1);
    assert!(!s.ended);
    // Events are in the file the moment they are recorded: every receive
    // the rank completed (4 + 1) survives its SIGKILL.
    assert_eq!(counts(s).recvs, 5);
}

/// The library loads into processes without MPI (launchers, shells).
pub fn harmless_without_mpi(f: &Flavour) {
    let lib = f.library();
    let out = std::process::Command::new("/bin/true").env("LD_PRELOAD", &lib).output().unwrap();
    assert_success(&out, "/bin/true with the preload");
    assert!(out.stderr.is_empty());
    let out = std::process::Command::new("sh").args(["-c", "echo ok"]).env("LD_PRELOAD", &lib).output().unwrap();
    assert_eq!(stdout(&out), "ok\n");
    let dynamic = std::process::Command::new("readelf").arg("-d").arg(&lib).output();
    if super::required("readelf (binutils)", dynamic.is_ok()) {
        let d = stdout(&dynamic.unwrap());
        assert!(!d.contains("libmpi"), "{} must not need libmpi:\n{d}", lib.display());
    }
}

/// The library preloaded into a program of the other MPI: one warning per
/// process, the program unchanged, nothing recorded.
pub fn wrong_flavour(lib_of: &Flavour, program_of: &Flavour) {
    if !program_of.available() {
        return;
    }
    for (program, args) in [("p2p.c", &["-n", "1"][..]), ("fortran.f90", &[][..])] {
        let exe = program_of.compile(program);
        let plain = program_of.run(&exe, 2, args, None, &[]);
        let dir = tempfile::tempdir().unwrap();
        let lib = lib_of.library().display().to_string();
        let env = [("LD_PRELOAD", lib.as_str()), ("GPUTRACE_EXPERIMENT_DIRECTORY", &*dir.path().to_string_lossy())];
        let traced = program_of.run(&exe, 2, args, None, &env);
        assert_success(&traced, &format!("{program} with the other flavour's library"));
        assert_eq!(stdout(&plain), stdout(&traced), "{program}");
        let stderr = String::from_utf8_lossy(&traced.stderr);
        // One warning per rank at MPI_Init; none where the library never
        // sees MPI_Init (Open MPI's Fortran init calls PMPI_Init itself,
        // and the MPICH library has no Fortran wrappers).
        let warnings = stderr.matches("[gputrace] warning:").count();
        assert!(warnings == 2 || (warnings == 0 && program.ends_with(".f90")), "{stderr}");
        assert!(Trace::load(dir.path()).streams.is_empty());
    }
}

/// comms.c: messages on an idup'ed communicator, across an
/// intercommunicator, on topologies and on a group-made communicator all
/// translate to the right processes; both groups of the
/// intercommunicator agree on its definition.
pub fn communicators(f: &Flavour, np: usize) {
    let (trace, out) = f.traced("comms.c", np, &["-n", "2"], &[]);
    checks::well_formed(&trace);
    checks::messages_match(&trace);
    let sum = summary(&out);
    for s in &trace.streams {
        let want = &sum[&s.rank];
        assert_eq!(want["errors"], 0);
        let c = counts(s);
        assert_eq!((c.sends, c.recvs), (want["sends"], want["recvs"]), "rank {}", s.rank);
        assert_eq!((c.bytes_sent, c.bytes_recv), (want["bytes_sent"], want["bytes_recv"]));
        for (_, _, e) in &s.events {
            if let Event::MpiCollectiveEnd(k) = e
                && k.op == CollectiveOp::Bcast
                && let Some(root) = k.root
            {
                assert_eq!(s.world(k.comm, root), 0, "rank {}: the broadcast's root", s.rank);
            }
        }
        // World, self, idup, half, inter, merged, cart, sub (+ even).
        assert!(s.comms.len() >= 8, "rank {}: {:?}", s.rank, s.comms.values());
        // Names the program gave with MPI_Comm_set_name.
        let names: Vec<&str> = s.comms.values().map(|c| c.name.as_str()).collect();
        let half = if s.rank % 2 == 0 { "even ranks" } else { "odd ranks" };
        assert!(names.contains(&"ring") && names.contains(&half), "rank {}: {names:?}", s.rank);
    }
}

/// abort.c: the aborting rank's stream is finished, with its messages
/// and a balanced MPI_Abort region; the job's status is unchanged.
pub fn abort(f: &Flavour) {
    let exe = f.compile("abort.c");
    // MPI_Abort is in Score-P's group ext, not on by default.
    let env = [("GPUTRACE_MPI_ENABLE_GROUPS", "default,ext")];
    let plain = f.run(&exe, 2, &["-n", "3"], None, &env);
    let dir = tempfile::tempdir().unwrap();
    let traced = f.run(&exe, 2, &["-n", "3"], Some(dir.path()), &env);
    assert!(!plain.status.success());
    assert_eq!(plain.status.code(), traced.status.code());
    // Not compared: Hydra may drop the aborting rank's last line (printed
    // and flushed just before MPI_Abort) with or without tracing.
    let trace = Trace::load(dir.path());
    let s = trace.rank(1);
    assert!(s.ended);
    checks::balanced(s);
    assert_eq!(s.entered("MPI_Abort"), 1);
    assert_eq!(counts(s).recvs, 3);
}

/// Compiles a C program of `tests/programs/mpi` with `cc` (no MPI) into
/// `out`, with `flags`.
fn cc(source: &str, out: &Path, flags: &[&str]) {
    let built = Command::new("cc").arg("-O1").arg("-o").arg(out).arg(programs_dir().join(source)).args(flags).output();
    let built = built.expect("cc is not installed");
    assert_success(&built, &format!("cc {source}"));
}

/// p2p.c built with `f`'s MPI as a shared object in `dir`, its `main`
/// renamed `program_main` (for loader.c).
fn p2p_object(f: &Flavour, dir: &Path) -> std::path::PathBuf {
    let object = dir.join("p2p.so");
    let built = Command::new(f.mpicc)
        .args(["-O1", "-shared", "-fPIC", "-Dmain=program_main", "-o"])
        .arg(&object)
        .arg(programs_dir().join("p2p.c"))
        .output()
        .unwrap();
    assert_success(&built, "p2p.c as a shared object");
    object
}

/// p2p.c built as a shared object and opened with `dlopen(RTLD_LOCAL)` by
/// loader.c (no MPI of its own), as Python opens mpi4py: the MPI library
/// is out of `dlsym(RTLD_NEXT)`'s and `dlsym(RTLD_DEFAULT)`'s reach, the
/// program's calls reach the wrappers all the same, and the wrappers find
/// their PMPI functions in it.
pub fn opened_local(f: &Flavour, np: usize) {
    let dir = tempfile::tempdir().unwrap();
    let loader = dir.path().join("loader");
    cc("loader.c", &loader, &["-ldl"]);
    let object = p2p_object(f, dir.path()).display().to_string();
    let args = [object.as_str(), "-n", "2"];
    let plain = f.run(&loader, np, &args, None, &[]);
    assert_success(&plain, "loader p2p.so");
    let traces = tempfile::tempdir().unwrap();
    let traced = f.run(&loader, np, &args, Some(traces.path()), &[]);
    assert_success(&traced, "loader p2p.so, traced");
    assert_eq!(stdout(&plain), stdout(&traced));
    let stderr = String::from_utf8_lossy(&traced.stderr);
    assert!(!stderr.contains("[gputrace]"), "{stderr}");
    let trace = Trace::load(traces.path());
    assert_eq!(trace.streams.len(), np);
    check_p2p(&trace, &stdout(&traced), np);
}

/// The lookups never stop a program. A program without MPI that finds
/// the wrappers by `dlsym` gets an error (`MPI_ERR_OTHER`, 0.0 from
/// `MPI_Wtime`) and one warning, and the MPI it opens afterwards is found;
/// an MPI library without `PMPI_*` is called through its `MPI_*`, with
/// one warning.
pub fn lookups_never_abort(f: &Flavour, err_other: i32) {
    let lib = f.library();
    let dir = tempfile::tempdir().unwrap();
    let no_mpi = dir.path().join("no_mpi");
    cc("no_mpi.c", &no_mpi, &["-ldl"]);
    let plain = Command::new(&no_mpi).output().unwrap();
    assert_eq!(stdout(&plain), "no MPI\n");
    let out = Command::new(&no_mpi).env("LD_PRELOAD", &lib).output().unwrap();
    assert_success(&out, "no_mpi with the preload");
    assert_eq!(stdout(&out), format!("MPI_Initialized: {err_other} {err_other} flag=-7 MPI_Wtime: 0\n"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("[gputrace] warning:").count(), 1, "{stderr}");
    assert!(stderr.contains("no loaded library defines PMPI_Initialized"), "{stderr}");
    // An MPI opened later is found: the search is repeated once objects
    // have been loaded since it failed.
    let object = p2p_object(f, dir.path());
    let out = Command::new(&no_mpi).arg(&object).env("LD_PRELOAD", &lib).output().unwrap();
    assert_success(&out, "no_mpi opening MPI later, with the preload");
    assert!(stdout(&out).ends_with("after opening MPI: MPI_Initialized: 0 flag=0\n"), "{}", stdout(&out));

    let fake = dir.path().join("libnopmpi.so");
    cc("no_pmpi.c", &fake, &["-shared", "-fPIC", "-DLIBRARY"]);
    let plugin = dir.path().join("plugin.so");
    let rpath = format!("-Wl,-rpath,{}", dir.path().display());
    cc("no_pmpi.c", &plugin, &["-shared", "-fPIC", "-L", &dir.path().display().to_string(), "-lnopmpi", &rpath]);
    let loader = dir.path().join("loader");
    cc("loader.c", &loader, &["-ldl"]);
    let plain = Command::new(&loader).arg(&plugin).output().unwrap();
    assert_eq!(stdout(&plain), "MPI_Initialized: 0 flag=42\n");
    let out = Command::new(&loader).arg(&plugin).env("LD_PRELOAD", &lib).output().unwrap();
    assert_success(&out, "an MPI without PMPI, with the preload");
    assert_eq!(stdout(&out), stdout(&plain));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.matches("[gputrace] warning:").count(), 1, "{stderr}");
    assert!(stderr.contains("does not define PMPI_Initialized"), "{stderr}");
}
