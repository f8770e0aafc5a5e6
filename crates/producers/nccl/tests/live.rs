//! The exported entry points, called as NCCL calls them, with C
//! descriptors of several interface versions: the live stream must come
//! out as expected, and the capture it wrote must replay into the same
//! events. One test per binary: the plugin's state is per process.

mod common;

use std::ffi::{CStr, c_int, c_void};
use std::path::Path;
use std::ptr::null_mut;

use common::Stream;
use gputrace_nccl::abi::*;
use gputrace_nccl::capture::Capture;
use gputrace_nccl::exports::{ncclProfiler_v1, ncclProfiler_v2, ncclProfiler_v5};
use raw::{Collective, CollectiveOp, Event, Message};

const FLOAT: &CStr = c"ncclFloat32";

fn v5(type_: u64, parent: *mut c_void, u: DescrUnion_v5) -> EventDescr_v5 {
    EventDescr_v5 { type_, parentObj: parent, rank: 0, u }
}

/// Calls `startEvent` of v5 and returns the handle.
fn start5(ctx: *mut c_void, d: &mut EventDescr_v5) -> *mut c_void {
    let mut h = null_mut();
    // SAFETY: valid out-pointer and descriptor, as NCCL passes them.
    assert_eq!(unsafe { (ncclProfiler_v5.startEvent)(ctx, &mut h, d) }, NCCL_SUCCESS);
    h
}

fn state5(h: *mut c_void, code: c_int, args: Option<EventStateArgs_v4>) {
    let mut a = args;
    let p = a.as_mut().map_or(null_mut(), |a| a as *mut EventStateArgs_v4);
    // SAFETY: a handle from `start5` (or null) and valid arguments.
    assert_eq!(unsafe { (ncclProfiler_v5.recordEventState)(h, code, p) }, NCCL_SUCCESS);
}

fn stop(h: *mut c_void) {
    // SAFETY: a handle from a start (or null), stopped once.
    assert_eq!(unsafe { (ncclProfiler_v5.stopEvent)(h) }, NCCL_SUCCESS);
}

fn resolved(s: &Stream) -> Vec<String> {
    let mut out: Vec<String> = s
        .with_attrs()
        .iter()
        .map(|e| {
            let what = match e.event {
                Event::Enter { .. } | Event::Leave { .. } => {
                    format!("{:?} {}", std::mem::discriminant(&e.event), s.region_of(&e.event).unwrap())
                }
                other => format!("{other:?}"),
            };
            format!("{} @{} {what} {:?}", s.locations[&e.location].1, e.time, e.attrs)
        })
        .collect();
    out.sort();
    out
}

/// init (v5): the mask of every level, a context.
fn init_v5() -> *mut c_void {
    let mut ctx: *mut c_void = null_mut();
    let mut mask: c_int = -1;
    // SAFETY: valid out-pointers and a NUL-terminated name.
    let rc = unsafe {
        (ncclProfiler_v5.init)(&mut ctx, 0x1234_5678, &mut mask, c"trainer".as_ptr(), 1, 2, 1, std::ptr::null())
    };
    assert_eq!(rc, NCCL_SUCCESS);
    assert!(!ctx.is_null());
    assert_eq!(mask, 0x77e);
    // SAFETY: names are static NUL-terminated strings.
    assert_eq!(unsafe { CStr::from_ptr(ncclProfiler_v5.name) }, c"gputrace");
    ctx
}

/// ncclAllReduce(256 floats) outside a group.
fn all_reduce_outside_a_group(ctx: *mut c_void) {
    let g = start5(
        ctx,
        &mut v5(
            event::GROUP_API,
            null_mut(),
            DescrUnion_v5 { groupApi: GroupApiDescr { graphCaptured: false, groupDepth: 1 } },
        ),
    );
    assert!(!g.is_null());
    state5(g, 23, None);
    let call = start5(
        ctx,
        &mut v5(
            event::COLL_API,
            g,
            DescrUnion_v5 {
                collApi: CollApiDescr {
                    func: c"AllReduce".as_ptr(),
                    count: 256,
                    datatype: FLOAT.as_ptr(),
                    root: 0,
                    stream: null_mut(),
                    graphCaptured: false,
                },
            },
        ),
    );
    stop(call);
    state5(g, 24, None);
    let group = start5(
        ctx,
        &mut v5(event::GROUP, null_mut(), DescrUnion_v5 { kernelLaunch: KernelLaunchDescr { stream: null_mut() } }),
    );
    assert!(group.is_null(), "v5 plan-level groups are not recorded");
    let launch = start5(
        ctx,
        &mut v5(
            event::COLL,
            call,
            DescrUnion_v5 {
                coll: CollDescr_v5 {
                    seqNumber: 4,
                    func: c"AllReduce".as_ptr(),
                    sendBuff: std::ptr::null(),
                    recvBuff: null_mut(),
                    count: 256,
                    root: 0,
                    datatype: FLOAT.as_ptr(),
                    nChannels: 2,
                    nWarps: 16,
                    algo: c"RING".as_ptr(),
                    proto: c"LL".as_ptr(),
                    parentGroup: null_mut(),
                },
            },
        ),
    );
    assert!(launch.is_null(), "the launch goes into its call");
    stop(g);
}

/// A kernel channel and a proxy send on the proxy thread.
fn kernel_channel_and_proxy_send(ctx: *mut c_void) {
    let proxy = std::thread::Builder::new()
        .name("nccl proxy".into())
        .spawn({
            let ctx = ctx as usize;
            move || {
                let ctx = ctx as *mut c_void;
                let k = start5(
                    ctx,
                    &mut v5(
                        event::KERNEL_CH,
                        null_mut(),
                        DescrUnion_v5 { kernelCh: KernelChDescr_v4 { channelId: 1, pTimer: 1_000_000 } },
                    ),
                );
                state5(k, 22, Some(EventStateArgs_v4 { kernelCh: 1_002_000 }));
                stop(k);
                let op = start5(
                    ctx,
                    &mut v5(
                        event::PROXY_OP,
                        null_mut(),
                        DescrUnion_v5 {
                            proxyOp: ProxyOpDescr {
                                pid: std::process::id() as c_int,
                                channelId: 2,
                                peer: 0,
                                nSteps: 1,
                                chunkSize: 4096,
                                isSend: 1,
                            },
                        },
                    ),
                );
                let step = start5(
                    ctx,
                    &mut v5(event::PROXY_STEP, op, DescrUnion_v5 { proxyStep: ProxyStepDescr { step: 0 } }),
                );
                state5(step, 9, Some(EventStateArgs_v4 { proxyStep: 4096 }));
                stop(step);
                stop(op);
            }
        })
        .unwrap();
    proxy.join().unwrap();
}

/// Unknown event types, null descriptors and null handles are ignored.
fn unknown_and_null_inputs_are_ignored(ctx: *mut c_void) {
    assert!(
        start5(ctx, &mut v5(event::CE_COLL, null_mut(), DescrUnion_v5 { proxyStep: ProxyStepDescr { step: 0 } }))
            .is_null()
    );
    let mut h = null_mut();
    // SAFETY: a null descriptor, which the plugin must survive.
    assert_eq!(unsafe { (ncclProfiler_v5.startEvent)(ctx, &mut h, null_mut()) }, NCCL_SUCCESS);
    assert!(h.is_null());
    stop(null_mut());
    state5(null_mut(), 22, None);
}

/// A v2 communicator (NCCL 2.24): named by its first collective. Returns
/// its context.
fn v2_broadcast() -> *mut c_void {
    let mut ctx2: *mut c_void = null_mut();
    let mut mask2: c_int = -1;
    // SAFETY: valid out-pointers.
    assert_eq!(unsafe { (ncclProfiler_v2.init)(&mut ctx2, &mut mask2) }, NCCL_SUCCESS);
    assert_eq!(mask2, 0x3f);
    let mut d2 = EventDescr_v2 {
        type_: event::COLL as u8,
        parentObj: null_mut(),
        rank: 3,
        u: DescrUnion_v2 {
            coll: CollDescr_v2 {
                name: c"old".as_ptr(),
                commHash: 0xabc,
                seqNumber: 1,
                func: c"Broadcast".as_ptr(),
                sendBuff: std::ptr::null(),
                recvBuff: null_mut(),
                count: 10,
                root: 3,
                datatype: c"ncclInt64".as_ptr(),
                trafficBytes: 0,
                nMaxChannels: 1,
                nWarps: 4,
                algo: c"RING".as_ptr(),
                proto: c"SIMPLE".as_ptr(),
            },
        },
    };
    let mut h2 = null_mut();
    // SAFETY: as NCCL passes them.
    unsafe { (ncclProfiler_v2.startEvent)(ctx2, &mut h2, &mut d2) };
    assert!(!h2.is_null());
    stop(h2);
    ctx2
}

/// A v1 send (NCCL 2.23): numbered function and data type. Returns its
/// context.
fn v1_send() -> *mut c_void {
    let mut ctx1: *mut c_void = null_mut();
    let mut mask1: c_int = -1;
    // SAFETY: valid out-pointers.
    assert_eq!(unsafe { (ncclProfiler_v1.init)(&mut ctx1, &mut mask1) }, NCCL_SUCCESS);
    let mut d1 = EventDescr_v1 {
        type_: event::P2P as u8,
        parentObj: null_mut(),
        rank: 0,
        u: DescrUnion_v1 {
            p2p: P2pDescr_v1 {
                name: std::ptr::null(),
                commHash: 0x111,
                func: 6,
                buff: null_mut(),
                datatype: 7,
                count: 3,
                peer: 1,
            },
        },
    };
    let mut h1 = null_mut();
    // SAFETY: as NCCL passes them.
    unsafe { (ncclProfiler_v1.startEvent)(ctx1, &mut h1, &mut d1) };
    stop(h1);
    ctx1
}

/// The live stream in `raw_dir`: the three communicators, the two
/// collectives, the send, the kernel channel and the proxy lane.
fn check_live_stream(raw_dir: &Path) -> Stream {
    // The stream (beside it, this host's TSC map: the test ran without
    // the command's).
    let path = std::fs::read_dir(raw_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "gtr"))
        .expect("the live stream");
    let live = Stream::open(&path);
    live.check_nesting();
    let mut comms = live.nccl_comms();
    comms.sort();
    assert_eq!(
        comms,
        vec![
            (0, 0x1234_5678, 2, 1, "trainer".to_string()),
            (1, 0xabc, 0, 3, "old".to_string()),
            (2, 0x111, 0, 0, "NCCL comm 0000000000000111".to_string()),
        ]
    );
    let ends: Vec<Event> =
        live.events.iter().map(|e| e.2).filter(|e| matches!(e, Event::MpiCollectiveEnd(_))).collect();
    assert_eq!(
        ends,
        vec![
            Event::MpiCollectiveEnd(Collective {
                op: CollectiveOp::Allreduce,
                comm: 0,
                root: None,
                sent: 1024,
                received: 1024
            }),
            Event::MpiCollectiveEnd(Collective {
                op: CollectiveOp::Bcast,
                comm: 1,
                root: Some(3),
                sent: 80,
                received: 0
            }),
        ]
    );
    assert!(live.events.iter().any(|e| e.2 == Event::MpiSend(Message { peer: 1, comm: 2, tag: 0, bytes: 12 })));
    live.location("NCCL channel 1 (comm 0, rank 1)");
    live.location("NCCL proxy send channel 2 (comm 0, rank 1)");
    live
}

/// The capture replays into the same events as the live stream.
fn check_capture_replays(capture_path: &Path, live: &Stream) {
    let capture = Capture::load(capture_path).unwrap();
    assert_eq!(capture.header.pid, std::process::id());
    let replay_dir = tempfile::tempdir().unwrap();
    let replayed = gputrace_nccl::replay(&capture, replay_dir.path(), capture.header.clone()).unwrap();
    let again = Stream::open(&replayed);
    assert_eq!(resolved(&again), resolved(live));
    assert_eq!(again.nccl_comms().len(), 3);
}

#[test]
fn exported_entry_points_record_and_capture() {
    let dir = tempfile::tempdir().unwrap();
    let capture_path = dir.path().join("capture.ncclcap");
    // SAFETY: this binary runs this one test; nothing else reads or
    // writes the environment meanwhile.
    unsafe {
        std::env::set_var("GPUTRACE_EXPERIMENT_DIRECTORY", dir.path().join("exp"));
        std::env::set_var("GPUTRACE_NCCL_ENABLE", "all");
        std::env::set_var("GPUTRACE_NCCL_CAPTURE", &capture_path);
    }

    let ctx = init_v5();
    all_reduce_outside_a_group(ctx);
    kernel_channel_and_proxy_send(ctx);
    unknown_and_null_inputs_are_ignored(ctx);
    let ctx2 = v2_broadcast();
    let ctx1 = v1_send();
    for c in [ctx, ctx2, ctx1] {
        // SAFETY: our contexts.
        assert_eq!(unsafe { (ncclProfiler_v5.finalize)(c) }, NCCL_SUCCESS);
    }

    let live = check_live_stream(&dir.path().join("exp/raw"));
    check_capture_replays(&capture_path, &live);
}
