//! Replays of sequences built here ([`Builder`]), call by call as NCCL
//! reports them: launches, groups, communicators, graph captures, levels,
//! NVTX payloads, proxy and kernel lanes, and what NCCL never sends.

use super::{num, replay_capture, text};
use crate::common::Stream;
use crate::common::builder::*;
use gputrace_nccl::capture::Record;
use gputrace_nccl::levels::Levels;
use gputrace_nccl::model::{CommTag, Descr, Func, InitArgs, NvtxPayload, ProxyOp, Start, StateChange, Sym};
use raw::{CapturedOp, Collective, CollectiveOp, Definition, Event, Message};

fn collectives(s: &Stream) -> Vec<Collective> {
    s.events
        .iter()
        .filter_map(|(_, _, e)| match e {
            Event::MpiCollectiveEnd(c) => Some(*c),
            _ => None,
        })
        .collect()
}

#[test]
fn v4_launch_events_are_recorded_as_they_come() {
    let mut b = Builder::new(Levels::ALL);
    b.init(0x10, InitArgs { version: 4, ..v5_init(3) })
        .start(MAIN, 0x10, 0xa0, 0, 3, Descr::Group)
        .start(MAIN, 0x10, 0xa8, 0xa0, 3, Descr::Coll(coll(Func::Reduce, 100, "ncclFloat64", 3)))
        .start(MAIN, 0x10, 0xb0, 0xa0, 3, Descr::P2p(p2p(Func::Send, 10, 1)))
        .start(MAIN, 0x10, 0xb8, 0xa0, 3, Descr::P2p(p2p(Func::Recv, 20, 2)))
        .stop(MAIN, 0xa8)
        .stop(MAIN, 0xb0)
        .stop(MAIN, 0xb8)
        .stop(MAIN, 0xa0)
        .finalize(0x10);
    let (_dir, s) = replay_capture(&b.c);
    assert_eq!(s.nccl_comms(), vec![(0, 0xc0ffee, 4, 3, "world".to_string())]);
    let send = Message { peer: 1, comm: 0, tag: 0, bytes: 80 };
    let recv = Message { peer: 2, comm: 0, tag: 0, bytes: 160 };
    let reduce = Collective { op: CollectiveOp::Reduce, comm: 0, root: Some(3), sent: 0, received: 800 };
    // Each event is written when it comes: the standalone regions follow
    // NCCL's start/stop order (the Coll, Send and Recv overlap).
    let script = s.script(s.location("main"));
    assert_eq!(script[0], "Enter:ncclGroup");
    assert!(script.contains(&format!("{:?}", Event::MpiSend(send))));
    assert!(script.contains(&format!("{:?}", Event::MpiRecv(recv))));
    assert_eq!(collectives(&s), vec![reduce]);
    let evs = s.with_attrs();
    let r = evs.iter().find(|e| s.region_of(&e.event) == Some("ncclReduce")).unwrap();
    assert_eq!(text(&r.attrs, "algorithm"), "TREE");
    assert_eq!(text(&r.attrs, "protocol"), "LL128");
    assert_eq!(num(&r.attrs, "sequence"), 7);
    assert_eq!(num(&r.attrs, "root"), 3);
}

#[test]
fn v4_nested_launches_balance() {
    let mut b = Builder::new(Levels::ALL);
    b.init(0x10, InitArgs { version: 4, ..v5_init(0) })
        .start(MAIN, 0x10, 0xa0, 0, 0, Descr::Group)
        .start(MAIN, 0x10, 0xa8, 0xa0, 0, Descr::Coll(coll(Func::AllReduce, 100, "ncclFloat32", 0)))
        .stop(MAIN, 0xa8)
        .stop(MAIN, 0xa0);
    let (_dir, s) = replay_capture(&b.c);
    assert_eq!(
        s.script(s.location("main")),
        vec![
            "Enter:ncclGroup".to_string(),
            "Enter:ncclAllReduce".into(),
            "MpiCollectiveBegin".into(),
            format!(
                "{:?}",
                Event::MpiCollectiveEnd(Collective {
                    op: CollectiveOp::Allreduce,
                    comm: 0,
                    root: None,
                    sent: 400,
                    received: 400
                })
            ),
            "Leave:ncclAllReduce".into(),
            "Leave:ncclGroup".into(),
        ]
    );
}

#[test]
fn v2_defines_the_communicator_from_its_first_collective() {
    let mut b = Builder::new(Levels::ALL);
    let mut c = coll(Func::AllGather, 64, "ncclInt32", 0);
    c.comm = Some(CommTag { hash: 0xdead_beef, name: Some(Sym::intern("trainer")) });
    c.reduction = Some(Sym::intern("Sum"));
    b.init(0x10, InitArgs { version: 2, ..InitArgs::default() })
        .start(MAIN, 0x10, 0xa0, 0, 5, Descr::Group)
        .start(MAIN, 0x10, 0xa8, 0xa0, 5, Descr::Coll(c))
        .stop(MAIN, 0xa8)
        .stop(MAIN, 0xa0);
    let (_dir, s) = replay_capture(&b.c);
    // v1–v3 give no rank count: recorded as 0, the bytes as if it were 1.
    assert_eq!(s.nccl_comms(), vec![(0, 0xdead_beef, 0, 5, "trainer".to_string())]);
    assert_eq!(
        collectives(&s),
        vec![Collective { op: CollectiveOp::Allgather, comm: 0, root: None, sent: 256, received: 256 }]
    );
    let evs = s.with_attrs();
    let ag = evs.iter().find(|e| s.region_of(&e.event) == Some("ncclAllGather")).unwrap();
    assert_eq!(text(&ag.attrs, "reduction"), "Sum");
}

#[test]
fn without_a_hash_the_name_identifies_the_communicator() {
    let mut b = Builder::new(Levels::ALL);
    let mut c = coll(Func::AllReduce, 1, "ncclInt32", 0);
    c.comm = Some(CommTag { hash: 0, name: Some(Sym::intern("named")) });
    b.init(0x10, InitArgs { version: 3, ..InitArgs::default() })
        .start(MAIN, 0x10, 0xa8, 0, 1, Descr::Coll(c))
        .stop(MAIN, 0xa8);
    let (_dir, s) = replay_capture(&b.c);
    let comms = s.nccl_comms();
    assert_eq!(comms.len(), 1);
    assert_eq!(comms[0].1, gputrace_nccl::model::name_hash("named"));
}

#[test]
fn calls_in_an_explicit_group_keep_their_own_times() {
    let mut b = Builder::new(Levels::ALL);
    b.init(0x10, v5_init(1))
        .start(MAIN, 0x10, 0x100, 0, 1, Descr::GroupApi { depth: 2, graph_captured: false })
        .start(MAIN, 0x10, 0x108, 0x100, 1, Descr::CollApi(api(Func::AllReduce, 10, 0, false)))
        .stop(MAIN, 0x108)
        .start(MAIN, 0x10, 0x110, 0x100, 1, Descr::CollApi(api(Func::Broadcast, 10, 1, false)))
        .stop(MAIN, 0x110)
        .state(MAIN, 0x100, StateChange { code: 24, ..Default::default() })
        .start(MAIN, 0x10, 0, 0x110, 1, Descr::Coll(coll(Func::Broadcast, 20, "ncclInt8", 1)))
        .start(MAIN, 0x10, 0, 0x108, 1, Descr::Coll(coll(Func::AllReduce, 10, "ncclFloat16", 0)))
        .stop(MAIN, 0x100);
    let (_dir, s) = replay_capture(&b.c);
    let main = s.location("main");
    let script = s.script(main);
    assert_eq!(script.first().map(String::as_str), Some("Enter:ncclGroup"));
    assert_eq!(&script[script.len() - 3..], ["Enter:ncclGroupEnd", "Leave:ncclGroupEnd", "Leave:ncclGroup"]);
    let ks = collectives(&s);
    assert_eq!(ks.len(), 2);
    assert_eq!(ks[0], Collective { op: CollectiveOp::Allreduce, comm: 0, root: None, sent: 20, received: 20 });
    assert_eq!(ks[1], Collective { op: CollectiveOp::Bcast, comm: 0, root: Some(1), sent: 20, received: 0 });
    let evs = s.with_attrs();
    let times: Vec<(String, u64)> = evs
        .iter()
        .filter_map(|e| s.region_of(&e.event).map(|n| (format!("{:?}:{n}", std::mem::discriminant(&e.event)), e.time)))
        .collect();
    // AllReduce from its CollApi start (t=10210) to stop (10310).
    let ar: Vec<u64> = evs.iter().filter(|e| s.region_of(&e.event) == Some("ncclAllReduce")).map(|e| e.time).collect();
    assert_eq!(ar, vec![10_210, 10_310], "{times:?}");
    // Each call got its own launch's details, matched by parent.
    let ar_enter = evs.iter().find(|e| s.region_of(&e.event) == Some("ncclAllReduce")).unwrap();
    assert_eq!(num(&ar_enter.attrs, "sequence"), 7);
    assert_eq!(text(&ar_enter.attrs, "datatype"), "ncclFloat16");
}

#[test]
fn graph_launches_are_the_collectives_of_a_captured_call() {
    let mut b = Builder::new(Levels::ALL);
    b.init(0x10, v5_init(0))
        .start(MAIN, 0x10, 0x100, 0, 0, Descr::GroupApi { depth: 1, graph_captured: true })
        .start(MAIN, 0x10, 0x108, 0x100, 0, Descr::CollApi(api(Func::AllReduce, 8, 0, true)))
        .stop(MAIN, 0x108)
        .stop(MAIN, 0x100);
    // Two graph launches, from CUDA's host-callback thread, naming the
    // captured call as parent.
    for _ in 0..2 {
        b.start(PROXY, 0x10, 0x200, 0x108, 0, Descr::Coll(coll(Func::AllReduce, 8, "ncclFloat16", 0)))
            .stop(PROXY, 0x200);
    }
    let (_dir, s) = replay_capture(&b.c);
    let main = s.location("main");
    assert_eq!(s.script(main), vec!["Enter:ncclAllReduce", "Leave:ncclAllReduce"]);
    let on_proxy: Vec<Collective> = s
        .events
        .iter()
        .filter(|(l, _, _)| *l == s.location("proxy"))
        .filter_map(|(_, _, e)| if let Event::MpiCollectiveEnd(c) = e { Some(*c) } else { None })
        .collect();
    assert_eq!(on_proxy.len(), 2);
    assert_eq!(collectives(&s).len(), 2);
    // The capture defines what a launch moves, and that NCCL reported
    // the launches itself: the merge adds nothing at the graph's kernel.
    let captured: Vec<u64> = s
        .defs
        .iter()
        .filter_map(|d| match d {
            Definition::GraphCaptured { call, op: CapturedOp::Collective(k), .. } => {
                assert_eq!(k.op, CollectiveOp::Allreduce);
                Some(*call)
            }
            Definition::GraphCaptured { .. } => panic!("{d:?}"),
            _ => None,
        })
        .collect();
    let reported: Vec<u64> = s
        .defs
        .iter()
        .filter_map(|d| if let Definition::GraphLaunchReported { call } = d { Some(*call) } else { None })
        .collect();
    assert_eq!(captured.len(), 1);
    assert_eq!(reported, captured);
}

#[test]
fn late_launches_never_count_twice() {
    // A non-blocking communicator: the group ends before NCCL launches it,
    // on another thread.
    let mut b = Builder::new(Levels::ALL);
    b.init(0x10, v5_init(0))
        .start(MAIN, 0x10, 0x100, 0, 0, Descr::GroupApi { depth: 2, graph_captured: false })
        .start(MAIN, 0x10, 0x108, 0x100, 0, Descr::CollApi(api(Func::AllReduce, 8, 0, false)))
        .stop(MAIN, 0x108)
        .start(MAIN, 0x10, 0x110, 0x100, 0, Descr::P2pApi(api(Func::Send, 8, 0, false)))
        .stop(MAIN, 0x110)
        .stop(MAIN, 0x100)
        .start(PROXY, 0x10, 0x300, 0x108, 0, Descr::Coll(coll(Func::AllReduce, 8, "ncclFloat16", 0)))
        .start(PROXY, 0x10, 0x308, 0x110, 0, Descr::P2p(p2p(Func::Send, 8, 3)))
        .stop(PROXY, 0x308);
    let (_dir, s) = replay_capture(&b.c);
    assert_eq!(collectives(&s).len(), 1);
    let sends: Vec<Message> =
        s.events.iter().filter_map(|(_, _, e)| if let Event::MpiSend(m) = e { Some(*m) } else { None }).collect();
    assert_eq!(sends, vec![Message { peer: 3, comm: 0, tag: 0, bytes: 64 }]);
}

#[test]
fn levels_choose_what_is_recorded() {
    let run = |levels: &str| {
        let mut b = Builder::new(Levels::parse(levels).unwrap());
        b.init(0x10, v5_init(0))
            .start(MAIN, 0x10, 0x100, 0, 0, Descr::GroupApi { depth: 2, graph_captured: false })
            .start(MAIN, 0x10, 0x108, 0x100, 0, Descr::CollApi(api(Func::AllReduce, 8, 0, false)))
            .stop(MAIN, 0x108)
            .start(MAIN, 0x10, 0x110, 0x100, 0, Descr::P2pApi(api(Func::Recv, 8, 0, false)))
            .stop(MAIN, 0x110)
            .start(MAIN, 0x10, 0, 0x110, 0, Descr::P2p(p2p(Func::Recv, 8, 1)))
            .stop(MAIN, 0x100);
        let (_dir, s) = replay_capture(&b.c);
        let main = s.locations.keys().copied().next();
        main.map(|m| s.script(m).into_iter().filter(|l| l.starts_with("Enter")).collect::<Vec<_>>()).unwrap_or_default()
    };
    assert_eq!(run("group,coll,p2p"), vec!["Enter:ncclGroup", "Enter:ncclAllReduce", "Enter:ncclRecv"]);
    assert_eq!(run("coll"), vec!["Enter:ncclAllReduce"]);
    assert_eq!(run("p2p"), vec!["Enter:ncclRecv"]);
    assert_eq!(run("group"), vec!["Enter:ncclGroup"]);
    assert!(run("none").is_empty());
}

#[test]
fn a_collective_of_count_zero_is_its_nvtx_range_with_the_payload_bytes() {
    // NCCL 2.28 reports no profiler event for it: only its range.
    let mut b = Builder::new(Levels::ALL);
    let comm = v5_init(1).comm_id.unwrap();
    b.init(0x10, v5_init(1))
        .nvtx_push("ncclBroadcast", Some(NvtxPayload { comm, bytes: Some(0), root_or_peer: Some(0) }))
        .nvtx_pop();
    let (_dir, s) = replay_capture(&b.c);
    assert_eq!(s.script(s.location("main"))[0], "Enter:ncclBroadcast");
    let enter = s.with_attrs().into_iter().find(|e| matches!(e.event, Event::Enter { .. })).unwrap();
    assert_eq!((num(&enter.attrs, "bytes"), num(&enter.attrs, "count"), num(&enter.attrs, "root")), (0, 0, 0));
    assert_eq!(collectives(&s), [Collective { op: CollectiveOp::Bcast, comm: 0, root: Some(0), sent: 0, received: 0 }]);
}

#[test]
fn an_all_to_all_in_an_explicit_group_is_one_call_inside_the_group() {
    let mut b = Builder::new(Levels::ALL);
    b.init(0x10, v5_init(0)).nvtx_push("ncclGroupStart", None).nvtx_pop().nvtx_push("ncclAlltoAll", None);
    b.start(MAIN, 0x10, 0x100, 0, 0, Descr::GroupApi { depth: 2, graph_captured: false });
    let funcs = [Func::Send, Func::Recv, Func::Send, Func::Recv];
    for (i, f) in funcs.into_iter().enumerate() {
        let h = 0x200 + 8 * i as u64;
        b.start(MAIN, 0x10, h, 0x100, 0, Descr::P2pApi(api(f, 4, 0, false))).stop(MAIN, h);
    }
    b.nvtx_pop().nvtx_push("ncclGroupEnd", None).state(MAIN, 0x100, StateChange { code: 24, ..Default::default() });
    for (i, f) in funcs.into_iter().enumerate() {
        b.start(MAIN, 0x10, 0, 0x200 + 8 * i as u64, 0, Descr::P2p(p2p(f, 4, (i / 2) as i32)));
    }
    b.stop(MAIN, 0x100).nvtx_pop();
    let (_dir, s) = replay_capture(&b.c);
    let script = s.script(s.location("main"));
    let k = Collective { op: CollectiveOp::Alltoall, comm: 0, root: None, sent: 32, received: 32 };
    assert_eq!(
        script,
        [
            "Enter:ncclGroup",
            "Enter:ncclGroupStart",
            "Leave:ncclGroupStart",
            "Enter:ncclAlltoAll",
            "MpiCollectiveBegin",
            &format!("{:?}", Event::MpiCollectiveEnd(k)),
            "Leave:ncclAlltoAll",
            "Enter:ncclGroupEnd",
            "Leave:ncclGroupEnd",
            "Leave:ncclGroup",
        ]
    );
}

#[test]
fn a_range_that_never_ends_holds_a_bounded_number_of_events() {
    let mut b = Builder::new(Levels::ALL);
    b.init(0x10, v5_init(0)).nvtx_push("ncclCommInitRank", None);
    let n = 20_000u64;
    for i in 0..n {
        let (g, c) = (0x1000 + 16 * i, 0x1008 + 16 * i);
        b.start(MAIN, 0x10, g, 0, 0, Descr::GroupApi { depth: 1, graph_captured: false })
            .start(MAIN, 0x10, c, g, 0, Descr::CollApi(api(Func::AllReduce, 8, 0, false)))
            .stop(MAIN, c)
            .stop(MAIN, g);
    }
    b.nvtx_pop();
    let (_dir, s) = replay_capture(&b.c);
    assert_eq!(collectives(&s).len() as u64, n);
}

#[test]
fn implicit_group_of_several_calls_is_a_group() {
    // ncclAlltoAll in NCCL 2.28: sends and receives in one implicit group.
    let mut b = Builder::new(Levels::ALL);
    b.init(0x10, v5_init(0)).start(MAIN, 0x10, 0x100, 0, 0, Descr::GroupApi { depth: 1, graph_captured: false });
    for (i, f) in [Func::Send, Func::Recv, Func::Send, Func::Recv].into_iter().enumerate() {
        let h = 0x200 + 8 * i as u64;
        b.start(MAIN, 0x10, h, 0x100, 0, Descr::P2pApi(api(f, 4, 0, false))).stop(MAIN, h);
    }
    for (i, f) in [Func::Send, Func::Recv, Func::Send, Func::Recv].into_iter().enumerate() {
        b.start(MAIN, 0x10, 0, 0x200 + 8 * i as u64, 0, Descr::P2p(p2p(f, 4, (i / 2) as i32)));
    }
    b.stop(MAIN, 0x100);
    let (_dir, s) = replay_capture(&b.c);
    let script = s.script(s.location("main"));
    assert_eq!(script.first().map(String::as_str), Some("Enter:ncclGroup"));
    assert_eq!(script.iter().filter(|l| l.starts_with("MpiSend")).count(), 2);
    assert_eq!(script.iter().filter(|l| l.starts_with("MpiRecv")).count(), 2);
    // No ncclGroupEnd inside an implicit group.
    assert!(!script.iter().any(|l| l.contains("ncclGroupEnd")));
}

#[test]
fn proxy_operations_go_to_their_lanes() {
    let mut b = Builder::new(Levels::ALL);
    let op =
        |channel, peer, is_send| ProxyOp { pid: PID as i32, channel, peer, steps: 4, chunk_size: 1 << 16, is_send };
    let step_state = |bytes| StateChange { code: 9, trans_size: Some(bytes), ..Default::default() };
    b.init(0x10, v5_init(2))
        .start(PROXY, 0x10, 0x3f0, 0, 2, Descr::ProxyCtrl)
        .state(PROXY, 0x3f0, StateChange { code: 17, ..Default::default() })
        .state(PROXY, 0x3f0, StateChange { code: 18, appended: Some(2), ..Default::default() })
        .stop(PROXY, 0x3f0)
        .start(PROXY, 0x10, 0x400, 0xdead, 2, Descr::ProxyOp(op(3, 1, true)))
        .start(PROXY, 0x10, 0x408, 0xdead, 2, Descr::ProxyOp(op(3, 0, true)))
        .start(PROXY, 0x10, 0x410, 0x400, 2, Descr::ProxyStep { step: 0 })
        .state(PROXY, 0x410, step_state(1000))
        .state(PROXY, 0x410, step_state(1500))
        .stop(PROXY, 0x410)
        .start(PROXY, 0x10, 0x418, 0x400, 2, Descr::ProxyStep { step: 1 })
        .state(PROXY, 0x418, step_state(500))
        .stop(PROXY, 0x418)
        .stop(PROXY, 0x400)
        .stop(PROXY, 0x408)
        // Another process's operation (PXN): its context is not ours.
        .start(PROXY, 0x77, 0x420, 0, 2, Descr::ProxyOp(ProxyOp { pid: 9999, ..op(1, 0, false) }))
        .stop(PROXY, 0x420)
        .start(PROXY, 0x10, 0x428, 0, 2, Descr::ProxyCtrl)
        .state(PROXY, 0x428, StateChange { code: 15, ..Default::default() })
        .state(PROXY, 0x428, StateChange { code: 16, ..Default::default() })
        .stop(PROXY, 0x428)
        .finalize(0x10);
    let (_dir, s) = replay_capture(&b.c);
    let lane = s.location("NCCL proxy send channel 3 (comm 0, rank 2)");
    assert_eq!(
        s.script(lane),
        ["Enter:NCCL proxy send", "Leave:NCCL proxy send", "Enter:NCCL proxy send", "Leave:NCCL proxy send"]
    );
    let evs: Vec<_> = s.with_attrs().into_iter().filter(|e| e.location == lane).collect();
    assert_eq!(num(&evs[0].attrs, "bytes"), 2000);
    assert_eq!(num(&evs[0].attrs, "peer"), 1);
    assert_eq!(num(&evs[0].attrs, "steps"), 4);
    assert_eq!(num(&evs[0].attrs, "chunk size"), 65536);
    assert_eq!(num(&evs[0].attrs, "channel"), 3);
    // The second operation overlapped the first: shown from its end on.
    assert_eq!(evs[2].time, evs[1].time);
    assert_eq!(num(&evs[2].attrs, "bytes"), 0);
    s.location("NCCL proxy recv channel 1 (another process)");
    let proxy = s.location("proxy");
    assert_eq!(
        s.script(proxy),
        ["Enter:NCCL proxy append", "Leave:NCCL proxy append", "Enter:NCCL proxy sleep", "Leave:NCCL proxy sleep"]
    );
    let append = s.with_attrs().into_iter().find(|e| e.location == proxy).unwrap();
    assert_eq!(num(&append.attrs, "appended ops"), 2);
}

#[test]
fn kernel_channels_are_on_the_host_clock() {
    let mut b = Builder::new(Levels::parse("kernel").unwrap());
    b.init(0x10, v5_init(0));
    let gpu = 1_790_000_000_000_000_000u64;
    let host = 50_000u64;
    let mut at = |t: u64, h: u64, what: &str, channel: u8, g: u64| {
        let r = match what {
            "start" => Record::Start {
                t: host + t,
                tid: PROXY,
                ctx: 0x10,
                handle: h,
                start: Start { descr: Descr::KernelCh { channel, gpu_start: Some(gpu + g) }, parent: 0, rank: 0 },
            },
            "state" => Record::State {
                t: host + t,
                tid: PROXY,
                handle: h,
                state: StateChange { code: 22, gpu_timer: Some(gpu + g), ..Default::default() },
            },
            _ => Record::Stop { t: host + t, tid: PROXY, handle: h },
        };
        b.c.records.push(r);
    };
    // Channel 1 runs 3000..9000 on the GPU, channel 0 100..2100; the
    // proxy thread sees them 1000, 5000, 5000 and 700 ns late.
    at(4000, 0x508, "start", 1, 3000);
    at(5100, 0x500, "start", 0, 100);
    at(7100, 0x500, "state", 0, 2100);
    at(7100, 0x500, "stop", 0, 0);
    at(9700, 0x508, "state", 1, 9000);
    at(9700, 0x508, "stop", 1, 0);
    b.finalize(0x10);
    let (_dir, s) = replay_capture(&b.c);
    // The smallest lag (700 ns) is the offset estimate.
    let to_host = |g: u64| host + g + 700;
    let l0 = s.location("NCCL channel 0 (comm 0, rank 0)");
    let l1 = s.location("NCCL channel 1 (comm 0, rank 0)");
    let times = |l| s.events.iter().filter(|(x, _, _)| *x == l).map(|(_, t, _)| *t).collect::<Vec<_>>();
    assert_eq!(times(l0), vec![to_host(100), to_host(2100)]);
    assert_eq!(times(l1), vec![to_host(3000), to_host(9000)]);
    assert_eq!(s.script(l0), ["Enter:NCCL kernel channel 0", "Leave:NCCL kernel channel 0"]);
}

#[test]
fn sequences_nccl_never_sends_are_survived() {
    let mut b = Builder::new(Levels::ALL);
    b.init(0x10, v5_init(0))
        // Stops and states of handles never started.
        .stop(MAIN, 0x999)
        .state(MAIN, 0x998, StateChange { code: 22, gpu_timer: Some(1), ..Default::default() })
        // The group ends before its call does, then the call stops twice.
        .start(MAIN, 0x10, 0x100, 0, 0, Descr::GroupApi { depth: 2, graph_captured: false })
        .start(MAIN, 0x10, 0x108, 0x100, 0, Descr::CollApi(api(Func::AllReduce, 8, 0, false)))
        .stop(MAIN, 0x100)
        .stop(MAIN, 0x108)
        .stop(MAIN, 0x108)
        // A call whose parent is no group; events on a context never made.
        .start(MAIN, 0x10, 0x110, 0x4242, 0, Descr::CollApi(api(Func::Reduce, 8, 0, false)))
        .start(MAIN, 0x66, 0x118, 0, 0, Descr::Coll(coll(Func::AllReduce, 1, "ncclInt8", 0)))
        // A step whose operation is unknown, a group opened twice.
        .start(PROXY, 0x10, 0x120, 0x5555, 0, Descr::ProxyStep { step: 1 })
        .start(MAIN, 0x10, 0x130, 0, 0, Descr::GroupApi { depth: 1, graph_captured: false })
        .start(MAIN, 0x10, 0x138, 0, 0, Descr::GroupApi { depth: 1, graph_captured: false })
        .start(MAIN, 0x10, 0x140, 0, 0, Descr::Unsupported { type_bits: 1 << 12 })
        .stop(MAIN, 0x110)
        .stop(MAIN, 0x138)
        .stop(MAIN, 0x130)
        .finalize(0x10)
        .finalize(0x10);
    let (_dir, s) = replay_capture(&b.c);
    assert_eq!(collectives(&s).len(), 2);
}
