//! Replays of real runs on the GPU machine (2 × H200, NCCL 2.28.3,
//! `tests/gpu/programs/nccl_four.cu` and `torch_ddp.py`): the plugin's
//! captures joined with NCCL's NVTX ranges of the same processes, cut to a
//! few iterations (`tests/fixtures/nccl/README.md`). Each is checked
//! against NCCL's own log of the same calls (`NCCL_DEBUG_SUBSYS=COLL`,
//! cut alike) and the program's `expect` lines: every call once, named as
//! the program wrote it, with its count and bytes, nested as made.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{Attr, Stream};
use gputrace_nccl::capture::Capture;
use gputrace_nccl::replay;
use raw::{CollectiveOp, Event};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../tests/fixtures/nccl").join(name)
}

/// A call region as replayed: its name, the `count` and `bytes`
/// attributes (absent for a call NCCL reported no event for and whose
/// range had no payload), its collective (op, sent, received) and its
/// messages' bytes, and the regions it was inside.
#[derive(Debug, Clone)]
struct Call {
    time: u64,
    name: String,
    count: Option<u64>,
    bytes: Option<u64>,
    collective: Option<(CollectiveOp, u64, u64)>,
    messages: Vec<u64>,
    inside: Vec<String>,
}

const CALLS: &[&str] = &[
    "ncclAllReduce",
    "ncclAllGather",
    "ncclReduceScatter",
    "ncclBroadcast",
    "ncclReduce",
    "ncclAlltoAll",
    "ncclGather",
    "ncclScatter",
    "ncclSend",
    "ncclRecv",
];

/// Replays `name`, checks that every location nests (what the merge would
/// otherwise repair), and returns the calls.
fn replay_run(name: &str) -> (Stream, Vec<Call>) {
    let c = Capture::load(&fixture(&format!("{name}.ncclcap"))).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = replay(&c, dir.path(), c.header.clone()).unwrap();
    let s = Stream::open(&path);
    s.check_nesting();
    let mut calls = Vec::new();
    let mut stacks: BTreeMap<u32, Vec<(String, Option<usize>)>> = BTreeMap::new();
    for ev in s.with_attrs() {
        let stack = stacks.entry(ev.location).or_default();
        let current = stack.iter().rev().find_map(|(_, i)| *i);
        match ev.event {
            Event::Enter { .. } => {
                let region = s.region_of(&ev.event).unwrap().to_string();
                let num = |n: &str| {
                    ev.attrs.iter().find(|(k, _)| k == n).map(|(_, a)| match a {
                        Attr::Num(v) => *v,
                        Attr::Text(t) => panic!("{n}: {t}"),
                    })
                };
                let index = CALLS.contains(&region.as_str()).then(|| {
                    calls.push(Call {
                        time: ev.time,
                        name: region.clone(),
                        count: num("count"),
                        bytes: num("bytes"),
                        collective: None,
                        messages: Vec::new(),
                        inside: stack.iter().map(|(n, _)| n.clone()).collect(),
                    });
                    calls.len() - 1
                });
                stack.push((region, index));
            }
            Event::Leave { .. } => {
                stack.pop();
            }
            Event::MpiCollectiveEnd(k) => {
                let i = current.expect("a collective inside a call");
                calls[i].collective = Some((k.op, k.sent, k.received));
            }
            Event::MpiSend(m) | Event::MpiRecv(m) => {
                let i = current.expect("a message inside a call");
                calls[i].messages.push(m.bytes);
            }
            _ => {}
        }
    }
    (s, calls)
}

/// NCCL's log: (call name, count) per line; every line is datatype 7
/// (ncclFloat32) in these runs but PyTorch's.
fn coll_log(name: &str) -> Vec<(String, u64, u32)> {
    let text = std::fs::read_to_string(fixture(&format!("{name}.coll"))).unwrap();
    text.lines()
        .map(|l| {
            let rest = l.split("NCCL INFO ").nth(1).unwrap();
            let func = rest.split(':').next().unwrap();
            let field = |k: &str| {
                let i = rest.find(&format!(" {k} ")).unwrap() + k.len() + 2;
                rest[i..].split(' ').next().unwrap().to_string()
            };
            (format!("nccl{func}"), field("count").parse().unwrap(), field("datatype").parse().unwrap())
        })
        .collect()
}

/// Bytes of one element of NCCL's data type number.
fn type_size(dt: u32) -> u64 {
    match dt {
        0 | 1 => 1,
        2 | 3 | 7 => 4,
        4 | 5 | 8 => 8,
        6 | 9 => 2,
        other => panic!("data type {other}"),
    }
}

/// The program's `expect rank=R op=OP calls=K count=C bytes=B` lines.
fn expect_lines(name: &str) -> Vec<(u32, String, u64, u64, u64)> {
    let text = std::fs::read_to_string(fixture(&format!("{name}.expect"))).unwrap();
    text.lines()
        .filter(|l| l.starts_with("expect rank=") && l.contains(" op="))
        .map(|l| {
            let field = |k: &str| l.split(&format!("{k}=")).nth(1).unwrap().split(' ').next().unwrap().to_string();
            (
                field("rank").parse().unwrap(),
                field("op"),
                field("calls").parse().unwrap(),
                field("count").parse().unwrap(),
                field("bytes").parse().unwrap(),
            )
        })
        .collect()
}

/// The calls equal NCCL's log line for line, in order: name and count
/// (a call without a count attribute is one NCCL reported no event for,
/// which NCCL 2.28 does for a collective of count 0 alone on a
/// communicator of two ranks: `taskAppend` in `enqueue.cc`), and bytes =
/// count × type size.
fn check_against_log(name: &str, calls: &[Call]) {
    let log = coll_log(name);
    let mut made: Vec<&Call> = calls.iter().collect();
    made.sort_by_key(|c| c.time);
    assert_eq!(made.len(), log.len(), "{name}: calls {made:?}");
    for (c, (func, count, dt)) in made.iter().zip(&log) {
        assert_eq!(&c.name, func, "{name}");
        match c.count {
            Some(n) => {
                assert_eq!(n, *count, "{name}: {c:?}");
                assert_eq!(c.bytes, Some(count * type_size(*dt)), "{name}: {c:?}");
            }
            None => assert_eq!(*count, 0, "{name}: {c:?} has no count, NCCL's log says {count}"),
        }
    }
}

/// Per (op, count) the number of calls, for comparison with the
/// program's lines cut to `kept` of its `iterations`.
fn check_against_program(name: &str, rank: u32, calls: &[Call], kept: u64, iterations: u64) {
    for (r, op, n, count, bytes) in expect_lines(name.split('_').next().unwrap()) {
        if r != rank {
            continue;
        }
        let of_op: Vec<&Call> = calls.iter().filter(|c| c.name == op).collect();
        assert_eq!(of_op.len() as u64, n * kept / iterations, "{name}: {op}");
        // The program notes the last count it used for an op.
        let last = of_op.last().unwrap();
        assert_eq!((last.count, last.bytes), (Some(count), Some(bytes)), "{name}: {op}");
    }
}

#[test]
fn groups_nest_as_made_and_hold_their_calls() {
    for rank in 0..2 {
        let name = format!("groups_rank{rank}");
        let (s, calls) = replay_run(&name);
        check_against_log(&name, &calls);
        check_against_program(&name, rank, &calls, 5, 50);
        let main = s.location("nccl_four_mpi");
        let script = s.script(main);
        let group: Vec<&str> = script[..12].iter().map(String::as_str).collect();
        assert_eq!(
            group,
            [
                "Enter:ncclGroup",
                "Enter:ncclGroupStart",
                "Leave:ncclGroupStart",
                "Enter:ncclSend",
                &format!("{:?}", Event::MpiSend(raw::Message { peer: 1 - rank, comm: 0, tag: 0, bytes: 262_144 })),
                "Leave:ncclSend",
                "Enter:ncclRecv",
                &format!("{:?}", Event::MpiRecv(raw::Message { peer: 1 - rank, comm: 0, tag: 0, bytes: 262_144 })),
                "Leave:ncclRecv",
                "Enter:ncclGroupEnd",
                "Leave:ncclGroupEnd",
                "Leave:ncclGroup",
            ]
        );
        assert!(calls.iter().all(|c| c.inside == ["ncclGroup"] && c.messages == [262_144]), "{calls:?}");
        let groups = script.iter().filter(|l| *l == "Enter:ncclGroup").count();
        assert_eq!(groups, 5);
    }
}

#[test]
fn a_halo_exchange_is_one_group_of_four_calls_with_their_messages() {
    for rank in 0..2 {
        let name = format!("halo_rank{rank}");
        let (s, calls) = replay_run(&name);
        check_against_log(&name, &calls);
        check_against_program(&name, rank, &calls, 5, 50);
        assert!(calls.iter().all(|c| c.inside == ["ncclGroup"] && c.messages == [262_144]));
        let script = s.script(s.location("nccl_four_mpi"));
        assert_eq!(script.iter().filter(|l| *l == "Enter:ncclGroup").count(), 5);
        assert_eq!(script.iter().filter(|l| *l == "Enter:ncclGroupEnd").count(), 5);
    }
}

#[test]
fn collectives_of_count_zero_are_recorded_from_nccls_ranges() {
    for rank in 0..2 {
        let name = format!("zero_rank{rank}");
        let (_s, calls) = replay_run(&name);
        // 2 iterations of count 0, 2 of count 2, 4 collectives each.
        check_against_log(&name, &calls);
        check_against_program(&name, rank, &calls, 4, 100);
        let (zero, two): (Vec<&Call>, Vec<&Call>) = calls.iter().partition(|c| c.count.is_none());
        assert_eq!((zero.len(), two.len()), (8, 8));
        for op in ["ncclAllGather", "ncclReduceScatter", "ncclAllReduce", "ncclBroadcast"] {
            assert_eq!(zero.iter().filter(|c| c.name == op).count(), 2, "{op}");
        }
        // Counts of 2 have their collectives: all-gather's 8 bytes from
        // each of 2 ranks.
        let ag = two.iter().find(|c| c.name == "ncclAllGather").unwrap();
        assert_eq!(ag.collective, Some((CollectiveOp::Allgather, 8, 16)));
    }
}

#[test]
fn an_all_to_all_is_one_call_with_its_collective() {
    for rank in 0..2 {
        let name = format!("alltoall_rank{rank}");
        let (s, calls) = replay_run(&name);
        check_against_log(&name, &calls);
        check_against_program(&name, rank, &calls, 5, 50);
        for c in &calls {
            assert_eq!(c.name, "ncclAlltoAll");
            assert_eq!(c.collective, Some((CollectiveOp::Alltoall, 16, 16)), "2 floats to each of 2 ranks");
            assert!(c.messages.is_empty() && c.inside.is_empty());
        }
        let script = s.script(s.location("nccl_four_mpi"));
        assert!(!script.iter().any(|l| l.contains("ncclSend") || l.contains("ncclGroup")));
    }
}

#[test]
fn one_process_with_a_communicator_per_gpu_groups_its_calls() {
    let name = "single_rank01";
    let (s, calls) = replay_run(name);
    check_against_log(name, &calls);
    // Two communicators of one process: ranks 0 and 1.
    let comms = s.nccl_comms();
    assert_eq!(comms.iter().map(|c| c.3).collect::<Vec<_>>(), [0, 1]);
    for rank in 0..2 {
        let mine: Vec<Call> =
            calls.iter().enumerate().filter(|(i, _)| *i as u32 % 2 == rank).map(|(_, c)| c.clone()).collect();
        check_against_program("single", rank, &mine, 2, 50);
    }
    assert!(calls.iter().all(|c| c.inside == ["ncclGroup"] && c.collective.is_some()));
}

#[test]
fn collectives_outside_groups_are_one_region_each() {
    for rank in 0..2 {
        let name = format!("collectives_rank{rank}");
        let (_s, calls) = replay_run(&name);
        check_against_log(&name, &calls);
        check_against_program(&name, rank, &calls, 5, 50);
        assert!(calls.iter().all(|c| c.inside.is_empty() && c.collective.is_some()));
    }
}

#[test]
fn pytorch_ddp_calls_on_two_threads() {
    for rank in 0..2 {
        let name = format!("ddp4_rank{rank}");
        let (_s, calls) = replay_run(&name);
        check_against_log(&name, &calls);
        // 10 steps of gradient all-reduces, their bytes the gradients'.
        let grads: u64 = calls.iter().filter(|c| c.name == "ncclAllReduce").map(|c| c.bytes.unwrap()).sum::<u64>() / 10;
        assert_eq!(grads, 3_150_848, "expect lines: grad_bytes 3150848");
    }
}

/// NCCL 2.28 reports a graph's launches to the plugin only through the
/// host callback it puts in the graph for proxy operations; between two
/// GPUs of one node (NVLink, no proxy) the graph has none, and the capture
/// holds the captured calls and nothing of the 50 launches.
#[test]
fn graph_captured_calls_are_regions_without_traffic() {
    for rank in 0..2 {
        let name = format!("graph_rank{rank}");
        let (_s, calls) = replay_run(&name);
        check_against_log(&name, &calls);
        check_against_program(&name, rank, &calls, 1, 1);
        assert!(calls.iter().all(|c| c.inside == ["ncclGroup"] && c.messages.is_empty()));
    }
}
