//! What the plugin costs NCCL: the callbacks of one `ncclAllReduce`
//! outside a group (GroupApi start, two states, CollApi start and stop,
//! the launch's Group and Coll starts, GroupApi stop: 8 calls) through
//! the exported v5 entry points, recording into a scratch directory; and,
//! for the handle design, a heap cell from `malloc` against one recycled
//! from a per-thread list.
//!
//! `cargo run --release -p gputrace-nccl --example callback_cost [N]`

use std::cell::RefCell;
use std::ffi::{CStr, c_int, c_void};
use std::hint::black_box;
use std::ptr::null_mut;
use std::time::Instant;

use gputrace_nccl::abi::*;
use gputrace_nccl::exports::ncclProfiler_v5;

fn start(ctx: *mut c_void, type_: u64, parent: *mut c_void, u: DescrUnion_v5) -> *mut c_void {
    let mut d = EventDescr_v5 { type_, parentObj: parent, rank: 0, u };
    let mut h = null_mut();
    // SAFETY: a valid out-pointer and descriptor, as NCCL passes them.
    unsafe { (ncclProfiler_v5.startEvent)(ctx, &mut h, &mut d) };
    h
}

fn allreduce(ctx: *mut c_void) {
    const F: &CStr = c"AllReduce";
    const T: &CStr = c"ncclFloat32";
    let g = start(
        ctx,
        event::GROUP_API,
        null_mut(),
        DescrUnion_v5 { groupApi: GroupApiDescr { graphCaptured: false, groupDepth: 1 } },
    );
    // SAFETY: a handle from `start`, not yet stopped.
    unsafe { (ncclProfiler_v5.recordEventState)(g, 23, null_mut()) };
    let api = CollApiDescr {
        func: F.as_ptr(),
        count: 2,
        datatype: T.as_ptr(),
        root: 0,
        stream: null_mut(),
        graphCaptured: false,
    };
    let c = start(ctx, event::COLL_API, g, DescrUnion_v5 { collApi: api });
    // SAFETY: a handle from `start`, stopped once.
    unsafe { (ncclProfiler_v5.stopEvent)(c) };
    // SAFETY: a handle from `start`, not yet stopped.
    unsafe { (ncclProfiler_v5.recordEventState)(g, 24, null_mut()) };
    let group = start(ctx, event::GROUP, null_mut(), DescrUnion_v5 { proxyStep: ProxyStepDescr { step: 0 } });
    let coll = CollDescr_v5 {
        seqNumber: 0,
        func: F.as_ptr(),
        sendBuff: std::ptr::null(),
        recvBuff: null_mut(),
        count: 2,
        root: 0,
        datatype: T.as_ptr(),
        nChannels: 1,
        nWarps: 16,
        algo: c"RING".as_ptr(),
        proto: c"LL".as_ptr(),
        parentGroup: group,
    };
    start(ctx, event::COLL, c, DescrUnion_v5 { coll });
    // SAFETY: a handle from `start`, stopped once.
    unsafe { (ncclProfiler_v5.stopEvent)(g) };
}

fn main() {
    let n: u32 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(200_000);
    let dir = std::env::temp_dir().join(format!("gputrace-nccl-cost-{}", std::process::id()));
    // SAFETY: single-threaded so far.
    unsafe { std::env::set_var("GPUTRACE_EXPERIMENT_DIRECTORY", &dir) };
    let mut ctx = null_mut();
    let mut mask: c_int = 0;
    // SAFETY: valid out-pointers.
    unsafe { (ncclProfiler_v5.init)(&mut ctx, 1, &mut mask, std::ptr::null(), 1, 2, 0, std::ptr::null()) };
    for _ in 0..n / 10 {
        allreduce(ctx);
    }
    let t = Instant::now();
    for _ in 0..n {
        allreduce(ctx);
    }
    let per = t.elapsed().as_nanos() as f64 / f64::from(n);
    println!("plugin: {per:.0} ns per ncclAllReduce (8 callbacks, {:.0} ns each)", per / 8.0);
    // SAFETY: our context.
    unsafe { (ncclProfiler_v5.finalize)(ctx) };
    let _ = std::fs::remove_dir_all(&dir);

    type Cell = [u64; 8];
    let t = Instant::now();
    for i in 0..n {
        let b = black_box(Box::new([u64::from(i); 8]));
        drop(b);
    }
    let boxed = t.elapsed().as_nanos() as f64 / f64::from(n);
    thread_local! {
        // Boxes on purpose: the heap cells are what is recycled.
        #[allow(clippy::vec_box)]
        static POOL: RefCell<Vec<Box<Cell>>> = const { RefCell::new(Vec::new()) };
    }
    POOL.with(|p| p.borrow_mut().push(Box::new([0; 8])));
    let t = Instant::now();
    for i in 0..n {
        let mut b = POOL.with(|p| p.borrow_mut().pop()).unwrap_or_else(|| Box::new([0; 8]));
        b[0] = u64::from(i);
        let b = black_box(b);
        POOL.with(|p| p.borrow_mut().push(b));
    }
    let pooled = t.elapsed().as_nanos() as f64 / f64::from(n);
    println!("handle cell: malloc+free {boxed:.1} ns, recycled {pooled:.1} ns");
}
