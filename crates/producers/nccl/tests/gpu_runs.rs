//! Replays of real runs on the GPU machine (4 × H200, NCCL 2.28.3,
//! `tests/gpu/programs/nccl_four.cu` and `torch_ddp.py` on 4 ranks, or one
//! process driving the 4 GPUs): the plugin's captures, with NCCL's NVTX
//! ranges of the same processes, cut to a few iterations
//! (`tests/fixtures/nccl/README.md`). Each is checked against NCCL's own
//! log of the same calls (`NCCL_DEBUG_SUBSYS=COLL`, cut alike) and the
//! program's `expect` lines: every call once, named as the program wrote
//! it, with its count and bytes, its peers, nested as made.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use common::{Attr, Stream};
use gputrace_nccl::capture::Capture;
use gputrace_nccl::replay;
use raw::{CapturedOp, CollectiveOp, Definition, Event, Message};

/// Ranks of every communicator in these runs.
const RANKS: u32 = 4;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../tests/fixtures/nccl").join(name)
}

/// A message of a call: sent (true) or received, and the message.
type Msg = (bool, Message);

/// A call region as replayed: its name, the `count` and `bytes`
/// attributes, its collective (op, sent, received), its messages, the communicator (the
/// rank in it) its collective or messages were on, its location and the
/// regions it was inside.
#[derive(Debug, Clone)]
struct Call {
    time: u64,
    location: u32,
    name: String,
    count: Option<u64>,
    bytes: Option<u64>,
    collective: Option<(CollectiveOp, u64, u64)>,
    messages: Vec<Msg>,
    rank: Option<u32>,
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
    // The rank of each communicator definition.
    let rank_of: BTreeMap<u32, u32> = s.nccl_comms().iter().map(|c| (c.0, c.3)).collect();
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
                        location: ev.location,
                        name: region.clone(),
                        count: num("count"),
                        bytes: num("bytes"),
                        collective: None,
                        messages: Vec::new(),
                        rank: None,
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
                calls[i].rank = Some(rank_of[&k.comm]);
            }
            Event::MpiSend(m) | Event::MpiRecv(m) => {
                let i = current.expect("a message inside a call");
                calls[i].messages.push((matches!(ev.event, Event::MpiSend(_)), m));
                calls[i].rank = Some(rank_of[&m.comm]);
            }
            _ => {}
        }
    }
    (s, calls)
}

/// NCCL's log: (call name, count, data type, root or peer) per line;
/// every line is datatype 7 (ncclFloat32) in these runs but PyTorch's.
fn coll_log(name: &str) -> Vec<(String, u64, u32, u32)> {
    let text = std::fs::read_to_string(fixture(&format!("{name}.coll"))).unwrap();
    text.lines()
        .map(|l| {
            let rest = l.split("NCCL INFO ").nth(1).unwrap();
            let func = rest.split(':').next().unwrap();
            let field = |k: &str| {
                let i = rest.find(&format!(" {k} ")).unwrap() + k.len() + 2;
                rest[i..].split(' ').next().unwrap().to_string()
            };
            assert!(rest.contains(&format!("[nranks={RANKS}]")), "{l}");
            (
                format!("nccl{func}"),
                field("count").parse().unwrap(),
                field("datatype").parse().unwrap(),
                field("root").parse().unwrap(),
            )
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

/// The calls equal NCCL's log line for line, in order: name, count and
/// bytes = count × type size (a collective of count 0, which NCCL 2.28
/// reports no event for (`taskAppend` in `enqueue.cc`), has them from its
/// range's payload: 0 bytes), and the peer of a send's or receive's
/// message is the log's.
fn check_against_log(name: &str, calls: &[Call]) {
    let log = coll_log(name);
    let mut made: Vec<&Call> = calls.iter().collect();
    made.sort_by_key(|c| c.time);
    assert_eq!(made.len(), log.len(), "{name}: calls {made:?}");
    for (c, (func, count, dt, root)) in made.iter().zip(&log) {
        assert_eq!(&c.name, func, "{name}");
        assert_eq!((c.count, c.bytes), (Some(*count), Some(count * type_size(*dt))), "{name}: {c:?}");
        if matches!(func.as_str(), "ncclSend" | "ncclRecv") {
            assert!(c.messages.iter().all(|(_, m)| m.peer == *root), "{name}: {c:?}, log's peer {root}");
        }
    }
}

/// Per (op, count) the number of calls, for comparison with the
/// program's lines cut to `kept` of its `iterations`.
fn check_against_program(name: &str, rank: u32, calls: &[Call], kept: u64, iterations: u64) {
    let lines = expect_lines(name.split('_').next().unwrap());
    assert!(lines.iter().any(|l| l.0 == rank), "{name}: no expect line of rank {rank}");
    for (r, op, n, count, bytes) in lines {
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

/// The next and the previous rank of a ring of `RANKS`.
fn neighbours(rank: u32) -> (u32, u32) {
    ((rank + 1) % RANKS, (rank + RANKS - 1) % RANKS)
}

fn sent(peer: u32, bytes: u64) -> Msg {
    (true, Message { peer, comm: 0, tag: 0, bytes })
}

fn received(peer: u32, bytes: u64) -> Msg {
    (false, Message { peer, comm: 0, tag: 0, bytes })
}

#[test]
fn groups_nest_as_made_and_hold_their_calls() {
    for rank in 0..RANKS {
        let name = format!("groups_rank{rank}");
        let (s, calls) = replay_run(&name);
        check_against_log(&name, &calls);
        check_against_program(&name, rank, &calls, 5, 50);
        // A ring: send to the next rank, receive from the previous.
        let (next, prev) = neighbours(rank);
        let main = s.location("nccl_four_mpi");
        let script = s.script(main);
        // The program's first NCCL call, kept whole.
        assert_eq!(script[0], "Enter:ncclCommInitRank");
        let first = script.iter().position(|l| l == "Enter:ncclGroup").unwrap();
        let group: Vec<&str> = script[first..first + 12].iter().map(String::as_str).collect();
        assert_eq!(
            group,
            [
                "Enter:ncclGroup",
                "Enter:ncclGroupStart",
                "Leave:ncclGroupStart",
                "Enter:ncclSend",
                &format!("{:?}", Event::MpiSend(sent(next, 262_144).1)),
                "Leave:ncclSend",
                "Enter:ncclRecv",
                &format!("{:?}", Event::MpiRecv(received(prev, 262_144).1)),
                "Leave:ncclRecv",
                "Enter:ncclGroupEnd",
                "Leave:ncclGroupEnd",
                "Leave:ncclGroup",
            ]
        );
        for c in &calls {
            assert_eq!(c.inside, ["ncclGroup"], "{c:?}");
            match c.name.as_str() {
                "ncclSend" => assert_eq!(c.messages, [sent(next, 262_144)]),
                _ => assert_eq!(c.messages, [received(prev, 262_144)]),
            }
        }
        let groups = script.iter().filter(|l| *l == "Enter:ncclGroup").count();
        assert_eq!(groups, 5);
    }
}

#[test]
fn a_halo_exchange_is_one_group_of_four_calls_with_their_messages() {
    for rank in 0..RANKS {
        let name = format!("halo_rank{rank}");
        let (s, calls) = replay_run(&name);
        check_against_log(&name, &calls);
        check_against_program(&name, rank, &calls, 5, 50);
        // Per exchange, as the program calls them: to the next, from the
        // previous, to the previous, from the next.
        let (next, prev) = neighbours(rank);
        let exchange = [sent(next, 262_144), received(prev, 262_144), sent(prev, 262_144), received(next, 262_144)];
        let mut made = calls.clone();
        made.sort_by_key(|c| c.time);
        assert_eq!(made.len(), 20);
        for (i, c) in made.iter().enumerate() {
            assert_eq!(c.inside, ["ncclGroup"], "{c:?}");
            assert_eq!(c.messages, [exchange[i % 4]], "{c:?}");
        }
        let script = s.script(s.location("nccl_four_mpi"));
        assert_eq!(script.iter().filter(|l| *l == "Enter:ncclGroup").count(), 5);
        assert_eq!(script.iter().filter(|l| *l == "Enter:ncclGroupEnd").count(), 5);
    }
}

#[test]
fn collectives_of_count_zero_are_recorded_from_nccls_ranges() {
    let ops = [
        ("ncclAllGather", CollectiveOp::Allgather),
        ("ncclReduceScatter", CollectiveOp::ReduceScatter),
        ("ncclAllReduce", CollectiveOp::Allreduce),
        ("ncclBroadcast", CollectiveOp::Bcast),
    ];
    for rank in 0..RANKS {
        let name = format!("zero_rank{rank}");
        let (_s, calls) = replay_run(&name);
        // 2 iterations of count 0, 2 of count 2, 4 collectives each.
        check_against_log(&name, &calls);
        check_against_program(&name, rank, &calls, 4, 100);
        let mut made = calls.clone();
        made.sort_by_key(|c| c.time);
        assert_eq!(made.len(), 16);
        let (zero, two) = made.split_at(8);
        for (i, c) in zero.iter().enumerate() {
            // NCCL reported nothing; the range is the region, with its
            // payload's 0 bytes and a collective of nothing.
            let (op, kind) = ops[i % 4];
            assert_eq!((c.name.as_str(), c.count, c.bytes), (op, Some(0), Some(0)), "{c:?}");
            assert_eq!(c.collective, Some((kind, 0, 0)), "{c:?}");
            assert!(c.messages.is_empty() && c.inside.is_empty(), "{c:?}");
        }
        for (i, c) in two.iter().enumerate() {
            assert_eq!((c.name.as_str(), c.count, c.bytes), (ops[i % 4].0, Some(2), Some(8)), "{c:?}");
        }
        // All-gather's 8 bytes from each of the 4 ranks.
        let ag = two.iter().find(|c| c.name == "ncclAllGather").unwrap();
        assert_eq!(ag.collective, Some((CollectiveOp::Allgather, 8, 8 * u64::from(RANKS))));
    }
}

#[test]
fn an_all_to_all_is_one_call_with_its_collective() {
    for rank in 0..RANKS {
        let name = format!("alltoall_rank{rank}");
        let (s, calls) = replay_run(&name);
        check_against_log(&name, &calls);
        check_against_program(&name, rank, &calls, 5, 50);
        assert_eq!(calls.len(), 5);
        // 2 floats to and from each of the 4 ranks.
        let each_way = 2 * 4 * u64::from(RANKS);
        for c in &calls {
            assert_eq!(c.name, "ncclAlltoAll");
            assert_eq!(c.collective, Some((CollectiveOp::Alltoall, each_way, each_way)), "{c:?}");
            assert!(c.messages.is_empty() && c.inside.is_empty(), "{c:?}");
        }
        let script = s.script(s.location("nccl_four_mpi"));
        assert!(!script.iter().any(|l| l.contains("ncclSend") || l.contains("ncclGroup")));
    }
}

#[test]
fn one_process_with_a_communicator_per_gpu_groups_its_calls() {
    let name = "single_rank0123";
    let (s, calls) = replay_run(name);
    check_against_log(name, &calls);
    // ncclCommInitAll: one communicator of the 4 ranks per GPU.
    let mut comms: Vec<(u32, u32)> = s.nccl_comms().iter().map(|c| (c.2, c.3)).collect();
    comms.sort();
    assert_eq!(comms, (0..RANKS).map(|r| (RANKS, r)).collect::<Vec<_>>());
    for rank in 0..RANKS {
        let mine: Vec<Call> = calls.iter().filter(|c| c.rank == Some(rank)).cloned().collect();
        check_against_program("single", rank, &mine, 2, 50);
    }
    // 2 iterations of an all-reduce group and a broadcast group, each
    // with one call per communicator in the program's order.
    let mut made = calls.clone();
    made.sort_by_key(|c| c.time);
    assert_eq!(made.len(), 16);
    for (group, four) in made.chunks(4).enumerate() {
        let op = if group % 2 == 0 { "ncclAllReduce" } else { "ncclBroadcast" };
        for (rank, c) in four.iter().enumerate() {
            assert_eq!((c.name.as_str(), c.rank), (op, Some(rank as u32)), "{c:?}");
            assert!(c.inside == ["ncclGroup"] && c.collective.is_some(), "{c:?}");
        }
    }
    let script = s.script(s.location("nccl_four"));
    assert_eq!(script.iter().filter(|l| *l == "Enter:ncclGroup").count(), 4);
    assert_eq!(script.iter().filter(|l| *l == "Enter:ncclCommDestroy").count(), 4);
}

#[test]
fn collectives_outside_groups_are_one_region_each() {
    for rank in 0..RANKS {
        let name = format!("collectives_rank{rank}");
        let (_s, calls) = replay_run(&name);
        check_against_log(&name, &calls);
        check_against_program(&name, rank, &calls, 5, 50);
        assert!(calls.iter().all(|c| c.inside.is_empty() && c.collective.is_some()));
    }
}

/// `torch_ddp.py`'s `expect rank R steps S grad_bytes B` per rank (its
/// ranks' output lines may run together).
fn ddp_expect() -> BTreeMap<u32, (u64, u64)> {
    let text = std::fs::read_to_string(fixture("ddp4.expect")).unwrap();
    text.split("expect rank ")
        .skip(1)
        .map(|part| {
            let w: Vec<&str> = part.split_whitespace().collect();
            assert_eq!((w[1], w[3]), ("steps", "grad_bytes"), "{part}");
            (w[0].parse().unwrap(), (w[2].parse().unwrap(), w[4].parse().unwrap()))
        })
        .collect()
}

#[test]
fn pytorch_ddp_calls_on_two_threads() {
    let expect = ddp_expect();
    assert_eq!(expect.keys().copied().collect::<Vec<_>>(), (0..RANKS).collect::<Vec<_>>());
    for rank in 0..RANKS {
        let name = format!("ddp4_rank{rank}");
        let (s, calls) = replay_run(&name);
        check_against_log(&name, &calls);
        // The steps' gradient all-reduces, from DDP's hooks on the
        // autograd engine's thread, their bytes the gradients'; the rest
        // (DDP's start: the broadcast of the model's state, ...) on the
        // main thread.
        let (steps, grad_bytes) = expect[&rank];
        let (all_reduces, rest): (Vec<&Call>, Vec<&Call>) = calls.iter().partition(|c| c.name == "ncclAllReduce");
        let all_reduced: u64 = all_reduces.iter().map(|c| c.bytes.unwrap()).sum();
        assert_eq!(all_reduced, steps * grad_bytes, "{name}");
        let autograd = s.location(&format!("pt_autograd_{rank}"));
        assert!(all_reduces.iter().all(|c| c.location == autograd), "{name}: {all_reduces:?}");
        let main = s.location("python");
        assert!(!rest.is_empty() && rest.iter().all(|c| c.location == main), "{name}: {rest:?}");
    }
}

/// NCCL 2.28 reports a graph's launches to the plugin only through the
/// host callback it puts in the graph for proxy operations; between GPUs
/// of one node (NVLink, no proxy) the graph has none, and the capture
/// holds the captured calls and nothing of the 50 launches. The calls are
/// regions without traffic; what each launch moves is defined for the
/// merge, which adds it at every run of the graph's NCCL kernel.
#[test]
fn graph_captured_calls_are_regions_and_define_what_each_launch_moves() {
    for rank in 0..RANKS {
        let name = format!("graph_rank{rank}");
        let (s, calls) = replay_run(&name);
        check_against_log(&name, &calls);
        check_against_program(&name, rank, &calls, 1, 1);
        assert_eq!(calls.len(), 4);
        assert!(calls.iter().all(|c| c.inside == ["ncclGroup"] && c.messages.is_empty()), "{calls:?}");
        let mut moved: Vec<(&str, u32, u64)> = s
            .defs
            .iter()
            .filter_map(|d| match d {
                Definition::GraphCaptured { op: CapturedOp::Send(m), .. } => Some(("send", m.peer, m.bytes)),
                Definition::GraphCaptured { op: CapturedOp::Recv(m), .. } => Some(("recv", m.peer, m.bytes)),
                _ => None,
            })
            .collect();
        moved.sort();
        // The halo: a send to and a receive from each neighbour.
        let (up, down) = ((rank + 1) % RANKS, (rank + RANKS - 1) % RANKS);
        let mut want =
            vec![("recv", up, 262_144), ("recv", down, 262_144), ("send", up, 262_144), ("send", down, 262_144)];
        want.sort();
        assert_eq!(moved, want, "{name}");
        assert!(s.defs.iter().all(|d| !matches!(d, Definition::GraphLaunchReported { .. })), "{name}");
    }
}
