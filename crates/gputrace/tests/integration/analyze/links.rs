//! A slower link as a straggler's cause, on a real run
//! (tests/programs/mpi/links.c: 4 ranks in a ring, each iteration 10 ms
//! of computation, 2 MiB to the next rank, MPI_Allreduce; rank 2 receives
//! into a strided datatype, which Open MPI unpacks element by element, so
//! the same bytes take longer to arrive there): rank 2 is the straggler
//! at the all-reduces, its cause the link from rank 1 with the bytes and
//! rates, its lateness within 20 % of the time it spent receiving beyond
//! the other ranks (by the program's own clock; 20 %: on two shared cores
//! the others' receives wait for their senders now and then).

use std::collections::HashMap;

use super::{ONE_AT_A_TIME, analyze, analyze_out, int};
use crate::util::*;

#[test]
fn a_rank_whose_messages_arrive_slower_is_the_straggler_with_its_link() {
    let (mpicc, mpirun, _) = openmpi();
    let exe = compile(mpicc, "links.c");
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = fresh_dir("an-links");
    let exe = exe.display().to_string();
    let out = trace(&dir, &[mpirun, "--oversubscribe", "-np", "4", &exe, "6", "10", "262144", "16", "2"], &[]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let recv: HashMap<i64, i64> = stdout
        .lines()
        .filter_map(|l| {
            let (rank, ns) = l.strip_prefix("links rank ")?.split_once(": recv_ns=")?;
            Some((rank.parse().ok()?, ns.trim().parse().ok()?))
        })
        .collect();
    assert_eq!(recv.len(), 4, "{stdout}");
    let mut others: Vec<i64> = [0, 1, 3].iter().map(|r| recv[r]).collect();
    others.sort_unstable();
    let extra = recv[&2] - others[1];
    let a = analyze(&dir, &[]);
    let rows = a["stragglers"].as_array().unwrap();
    let top = &rows[0];
    assert_eq!((top["rank"].as_i64(), top["cause_kind"].as_str()), (Some(2), Some("link")), "{rows:#?}");
    assert!(int(&top["times_last"]) >= 6, "{top:#}");
    let cause = top["cause"].as_str().unwrap();
    // Six messages of 2 MiB from rank 1; the next rank's as many.
    assert!(cause.starts_with("messages from rank 1: 12.0 MiB in "), "{cause}");
    assert!(cause.contains("the next rank's 12.0 MiB in "), "{cause}");
    let near = |got: i64, want: i64| (got - want).abs() * 5 <= want;
    assert!(
        near(int(&top["lateness_ns"]), extra),
        "lateness {} vs {extra} received beyond: {top:#}",
        top["lateness_ns"]
    );
    assert!(near(int(&top["cause_excess_ns"]), extra), "{top:#}");
    for r in &rows[1..] {
        assert!(int(&r["lateness_ns"]) < extra / 10, "{r:#}");
    }
    let table = text(&analyze_out(&dir, &[]).stdout);
    assert!(table.contains("a slower link (messages from rank 1: 12.0 MiB in"), "{table}");
}
