//! Replays of captures — the hand-written fixtures of
//! `tests/fixtures/nccl` and sequences built here — checked event by
//! event: regions, attributes, collectives with the bytes of the table in
//! `bytes.rs`, messages, communicator definitions, proxy and kernel lanes.
//! The fixtures are replayed here, the sequences in [`sequences`].

mod common;
#[path = "replay/sequences.rs"]
mod sequences;

use std::path::{Path, PathBuf};

use common::{Attr, Stream};
use gputrace_nccl::capture::{Capture, CaptureError};
use gputrace_nccl::replay;
use raw::{Collective, CollectiveOp, Event, Message};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../tests/fixtures/nccl").join(name)
}

fn replay_capture(c: &Capture) -> (tempfile::TempDir, Stream) {
    let dir = tempfile::tempdir().unwrap();
    let path = replay(c, dir.path(), c.header.clone()).unwrap();
    let s = Stream::open(&path);
    s.check_nesting();
    (dir, s)
}

fn attr<'a>(attrs: &'a [(String, Attr)], name: &str) -> Option<&'a Attr> {
    attrs.iter().find(|(n, _)| n == name).map(|(_, a)| a)
}

fn num(attrs: &[(String, Attr)], name: &str) -> u64 {
    match attr(attrs, name) {
        Some(Attr::Num(v)) => *v,
        other => panic!("attribute {name}: {other:?} in {attrs:?}"),
    }
}

fn text(attrs: &[(String, Attr)], name: &str) -> String {
    match attr(attrs, name) {
        Some(Attr::Text(v)) => v.clone(),
        other => panic!("attribute {name}: {other:?} in {attrs:?}"),
    }
}

fn v5_fixture(rank: u32) {
    let c = Capture::load(&fixture(&format!("v5_rank{rank}.ncclcap"))).unwrap();
    let (_dir, s) = replay_capture(&c);
    let comms = s.nccl_comms();
    assert_eq!(comms, vec![(0, 0x6a1f00c0ffee0002, 2, rank, "NCCL comm 6a1f00c0ffee0002".to_string())]);
    let main = s.location("nccl_test");
    let peer = 1 - rank;
    let msg = Message { peer, comm: 0, tag: 0, bytes: 4096 };
    let coll = |op, root, sent, received| {
        format!("{:?}", Event::MpiCollectiveEnd(Collective { op, comm: 0, root, sent, received }))
    };
    let mib = 1u64 << 20;
    let (bsent, brecv) = if rank == 0 { (4 * mib, 0) } else { (0, 4 * mib) };
    let expected: Vec<String> = [
        "Enter:ncclAllReduce",
        "MpiCollectiveBegin",
        &coll(CollectiveOp::Allreduce, None, 4 * mib, 4 * mib),
        "Leave:ncclAllReduce",
        "Enter:ncclAllGather",
        "MpiCollectiveBegin",
        &coll(CollectiveOp::Allgather, None, mib, 2 * mib),
        "Leave:ncclAllGather",
        "Enter:ncclReduceScatter",
        "MpiCollectiveBegin",
        &coll(CollectiveOp::ReduceScatter, None, 2 * mib, mib),
        "Leave:ncclReduceScatter",
        "Enter:ncclBroadcast",
        "MpiCollectiveBegin",
        &coll(CollectiveOp::Bcast, Some(0), bsent, brecv),
        "Leave:ncclBroadcast",
        "Enter:ncclGroup",
        "Enter:ncclSend",
        &format!("{:?}", Event::MpiSend(msg)),
        "Leave:ncclSend",
        "Enter:ncclRecv",
        &format!("{:?}", Event::MpiRecv(msg)),
        "Leave:ncclRecv",
        "Enter:ncclGroupEnd",
        "Leave:ncclGroupEnd",
        "Leave:ncclGroup",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(s.script(main), expected);

    let evs = s.with_attrs();
    let enter = |name: &str| {
        evs.iter().find(|e| matches!(e.event, Event::Enter { .. }) && s.region_of(&e.event) == Some(name)).unwrap()
    };
    let ar = enter("ncclAllReduce");
    assert_eq!(num(&ar.attrs, "bytes"), 4 * mib);
    assert_eq!(num(&ar.attrs, "count"), mib);
    assert_eq!(text(&ar.attrs, "datatype"), "ncclFloat32");
    assert_eq!(text(&ar.attrs, "algorithm"), "RING");
    assert_eq!(text(&ar.attrs, "protocol"), "SIMPLE");
    assert_eq!(num(&ar.attrs, "channels"), 16);
    assert_eq!(num(&ar.attrs, "sequence"), 0);
    assert!(attr(&ar.attrs, "root").is_none());
    // The implicit group is the call: from GroupApi start to its stop.
    let leave = evs
        .iter()
        .find(|e| matches!(e.event, Event::Leave { .. }) && s.region_of(&e.event) == Some("ncclAllReduce"))
        .unwrap();
    let base = c.header.monotonic_ns;
    assert_eq!(ar.time, base + 150_000);
    assert_eq!(leave.time, base + 161_000);
    // The all-gather's user count and data type, not the launch's bytes.
    let ag = enter("ncclAllGather");
    assert_eq!((num(&ag.attrs, "count"), text(&ag.attrs, "datatype")), (262_144, "ncclFloat32".into()));
    assert_eq!(num(&ag.attrs, "channels"), 8);
    assert_eq!(num(&enter("ncclBroadcast").attrs, "root"), 0);
    let send = enter("ncclSend");
    assert_eq!(num(&send.attrs, "peer"), u64::from(peer));
    assert_eq!(num(&send.attrs, "bytes"), 4096);
    assert_eq!(num(&send.attrs, "channels"), 1);
    // Only the main thread has events.
    assert!(s.events.iter().all(|(l, _, _)| *l == main));
}

#[test]
fn v5_fixture_rank0() {
    v5_fixture(0);
}

#[test]
fn v5_fixture_rank1() {
    v5_fixture(1);
}

#[test]
fn fixture_messages_pair_up_between_the_ranks() {
    let mut sends = Vec::new();
    let mut recvs = Vec::new();
    for rank in 0..2u32 {
        let c = Capture::load(&fixture(&format!("v5_rank{rank}.ncclcap"))).unwrap();
        let (_dir, s) = replay_capture(&c);
        let hash = s.nccl_comms()[0].1;
        for (_, _, e) in &s.events {
            match e {
                Event::MpiSend(m) => sends.push((hash, rank, m.peer, m.bytes)),
                Event::MpiRecv(m) => recvs.push((hash, m.peer, rank, m.bytes)),
                _ => {}
            }
        }
    }
    sends.sort();
    recvs.sort();
    assert_eq!(sends.len(), 2);
    assert_eq!(sends, recvs);
}

#[test]
fn malformed_captures_are_errors() {
    let good = std::fs::read_to_string(fixture("v5_rank0.ncclcap")).unwrap();
    let cases = [
        good.replacen("\"count\":1048576", "\"count\":\"lots\"", 1),
        good.replacen("\"CollApi\"", "\"CollApy\"", 1),
        good.replacen("\"version\":2", "\"version\":9", 1),
        good.replacen("\"levels\":\"group,coll,p2p\"", "\"levels\":\"group,colll\"", 1),
        good.replacen("\"pid\":21000,", "", 1),
        good.replacen("\"handle\":139637976731776,", "\"handle\":139637976731776,\"handle\":1,", 1),
        good.replacen("\"datatype\":\"ncclFloat32\"", "\"datatype\":7", 1),
        good.replacen("\"record\":\"stop\"", "\"record\":\"halt\"", 1),
        good.lines().take(3).collect::<Vec<_>>().join("\n") + "\n{",
        String::new(),
    ];
    assert!(Capture::read(good.as_bytes()).is_ok());
    for (i, text) in cases.iter().enumerate() {
        assert_ne!(text, &good, "case {i} changes the fixture");
        match Capture::read(text.as_bytes()) {
            Err(CaptureError::Parse { .. }) => {}
            other => panic!("case {i}: {other:?}"),
        }
    }
    assert!(matches!(Capture::load(Path::new("/nonexistent/x.ncclcap")), Err(CaptureError::Io(_))));
}
