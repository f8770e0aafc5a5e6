//! NCCL without a GPU: the plugin's callback captures of a 2-rank job
//! (tests/fixtures/nccl) replayed through the plugin's recording logic
//! into two processes' raw streams, merged by `gputrace merge`, and read
//! back with the Python reader and `gputrace stats`.

use std::process::Command;

use gputrace_nccl::Capture;

use crate::util::*;

fn merged_job() -> std::path::PathBuf {
    let exp = fresh_dir("nccl");
    for rank in 0..2 {
        let path = workspace().join(format!("tests/fixtures/nccl/v5_rank{rank}.ncclcap"));
        let capture = Capture::load(&path).unwrap();
        gputrace_nccl::replay::replay(&capture, &exp, capture.header.clone()).unwrap();
    }
    let mut cmd = Command::new(gputrace());
    let out = run(cmd.arg("merge").arg(&exp));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let err = text(&out.stderr);
    assert!(err.contains("NCCL: 8 collectives") && err.contains("2 send/recv"), "{err}");
    exp
}

#[test]
fn nccl_collectives_and_messages_merge_between_the_ranks() {
    let exp = merged_job();
    let facts = facts(&exp.join("traces.otf2"));
    assert_eq!(facts["ranks"], serde_json::json!([0, 1]));
    assert_well_formed(&facts);
    // Both ranks' send/receive pair up as messages between them.
    let sends = messages(&facts, "sends");
    assert_eq!(sends.len(), 2);
    assert_eq!(sends, messages(&facts, "recvs"));
    assert!(sends.iter().all(|m| m.4 == 4096 && m.0 != m.1 && m.2 == sends[0].2), "{sends:?}");
    // The collectives with the bytes of the fixture's table (rank 0, rank 1).
    let mut colls: Vec<(i64, String, Option<i64>, i64, i64)> = facts["collectives"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c[0].as_i64().unwrap(),
                c[1].as_str().unwrap().into(),
                c[3].as_i64(),
                c[4].as_i64().unwrap(),
                c[5].as_i64().unwrap(),
            )
        })
        .collect();
    colls.sort();
    let mib = 1 << 20;
    let want = [
        (0, "ALLGATHER", None, mib, 2 * mib),
        (0, "ALLREDUCE", None, 4 * mib, 4 * mib),
        (0, "BCAST", Some(0), 4 * mib, 0),
        (0, "REDUCE_SCATTER", None, 2 * mib, mib),
        (1, "ALLGATHER", None, mib, 2 * mib),
        (1, "ALLREDUCE", None, 4 * mib, 4 * mib),
        (1, "BCAST", Some(0), 0, 4 * mib),
        (1, "REDUCE_SCATTER", None, 2 * mib, mib),
    ];
    let want: Vec<_> = want.iter().map(|(r, op, root, s, g)| (*r, op.to_string(), *root, *s, *g)).collect();
    assert_eq!(colls, want);
    for rank in ["0", "1"] {
        let regions = &facts["regions"][rank];
        for name in ["ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast", "ncclSend", "ncclRecv"] {
            assert_eq!(regions[name], 1, "rank {rank} {name}: {regions}");
        }
    }
}

#[test]
fn nccl_stats_summarize_the_collectives() {
    let exp = merged_job();
    let mut cmd = Command::new(gputrace());
    let out = run(cmd.args(["stats", "--report", "nccl_sum", "--format", "csv"]).arg(&exp));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let csv = text(&out.stdout);
    for name in ["ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast", "ncclSend", "ncclRecv"] {
        let row = csv.lines().find(|l| l.ends_with(name)).unwrap_or_else(|| panic!("{name} missing:\n{csv}"));
        assert!(row.contains(",2,"), "2 instances (one per rank) of {name}: {row}");
    }
}

/// The real runs of `tests/fixtures/nccl` (4 H200s, NCCL 2.28.3), every
/// rank replayed and merged: no repair (every location nests as the
/// program's calls did), the sends pair with the receives, and each call
/// is a region as many times as NCCL's log has it.
#[test]
fn nccl_real_runs_merge_without_repairs() {
    const RANKS: &[&str] = &["0", "1", "2", "3"];
    for (name, ranks) in [
        ("groups", RANKS),
        ("halo", RANKS),
        ("zero", RANKS),
        ("alltoall", RANKS),
        ("graph", RANKS),
        ("collectives", RANKS),
        ("single", &["0123"]),
        ("ddp4", RANKS),
    ] {
        let exp = fresh_dir(&format!("nccl-{name}"));
        let mut log = String::new();
        for r in ranks {
            let path = workspace().join(format!("tests/fixtures/nccl/{name}_rank{r}.ncclcap"));
            let capture = Capture::load(&path).unwrap();
            gputrace_nccl::replay::replay(&capture, &exp, capture.header.clone()).unwrap();
            log += &std::fs::read_to_string(path.with_extension("coll")).unwrap();
        }
        let mut cmd = Command::new(gputrace());
        let out = run(cmd.arg("merge").arg(&exp));
        let err = text(&out.stderr);
        assert!(out.status.success(), "{name}: {err}");
        assert!(!err.contains("repaired"), "{name}: {err}");
        let facts = facts(&exp.join("traces.otf2"));
        assert_well_formed(&facts);
        assert_eq!(messages(&facts, "sends"), messages(&facts, "recvs"), "{name}");
        let mut regions = 0;
        for rank in facts["regions"].as_object().unwrap().values() {
            for (region, n) in rank.as_object().unwrap() {
                if region != "ncclGroup"
                    && region.starts_with("nccl")
                    && log.contains(&format!("INFO {}: ", &region[4..]))
                {
                    regions += n.as_i64().unwrap();
                }
            }
        }
        assert_eq!(regions as usize, log.lines().count(), "{name}: {}", facts["regions"]);
    }
}

/// The raw streams of a real 4-rank run (4 H200s, NCCL 2.28.3) of
/// `nccl_four_mpi graph 50`: each rank captures a halo exchange (a send
/// to and a receive from each neighbour, in a group) into a CUDA graph
/// once and launches it 50 times. Between GPUs of one node NCCL reports
/// nothing per launch; the merge joins the captured calls (NCCL streams)
/// to the graph's kernel nodes and their launches (CUDA streams), and
/// writes each launch's traffic inside its `cudaGraphLaunch`: per rank a
/// message per captured send and launch, each matched by its receive.
#[test]
fn nccl_graph_launches_move_what_the_capture_holds() {
    let exp = fresh_dir("nccl-graph4");
    std::fs::create_dir_all(&exp).unwrap();
    let tgz = workspace().join("tests/fixtures/nccl/graph4_raw.tgz");
    let out = run(Command::new("tar").arg("xzf").arg(&tgz).arg("-C").arg(&exp));
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = run(Command::new(gputrace()).arg("merge").arg(&exp));
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(!err.contains("repaired"), "{err}");
    assert!(err.contains("NCCL: 0 collectives (0 B sent), 400 send/recv (100.0 MiB)"), "{err}");
    // The program's own word: launches per rank and captured sends.
    let expect = std::fs::read_to_string(workspace().join("tests/fixtures/nccl/graph4_raw.out")).unwrap();
    let launches: Vec<usize> = expect
        .lines()
        .filter_map(|l| l.split_once("graph_launches=").and_then(|(_, n)| n.trim().parse().ok()))
        .collect();
    assert_eq!(launches, [50; 4]);
    let captured = expect.lines().filter(|l| l.contains("op=ncclSend calls=2 ")).count();
    assert_eq!(captured, 4);
    let facts = facts(&exp.join("traces.otf2"));
    assert_well_formed(&facts);
    let (sends, recvs) = (messages(&facts, "sends"), messages(&facts, "recvs"));
    assert_eq!(sends, recvs);
    for rank in 0..4i64 {
        let from: Vec<_> = sends.iter().filter(|m| m.0 == rank).collect();
        assert_eq!(from.len(), 50 * 2, "rank {rank}");
        // The halo's two neighbours, 256 KiB each time.
        let peers: std::collections::BTreeSet<i64> = from.iter().map(|m| m.1).collect();
        assert_eq!(peers, [(rank + 1) % 4, (rank + 3) % 4].into(), "rank {rank}");
        assert!(from.iter().all(|m| m.4 == 262_144 && m.2.starts_with("NCCL comm")), "rank {rank}");
    }
}
