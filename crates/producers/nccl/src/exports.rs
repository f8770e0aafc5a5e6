//! The symbols NCCL looks up — `ncclProfiler_v6` down to `ncclProfiler_v1`,
//! newest first — and the conversion of each version's descriptors and
//! state arguments into the plugin's own [`model`](crate::model).
//!
//! This is the thin layer above [`abi`](crate::abi): it reads C memory and
//! nothing else; what an event means is decided once, in
//! [`profiler`](crate::profiler), through [`live`](crate::live).

#![allow(non_upper_case_globals)]

use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_int, c_void};

use crate::abi::*;
use crate::live;
use crate::model::{
    ApiCall, CollLaunch, CommTag, Descr, Func, InitArgs, NvtxPayload, NvtxRange, P2pLaunch, ProxyOp, Start,
    StateChange, Sym, state,
};

const NAME: &CStr = c"gputrace";

/// The bytes of a C string; empty for null.
///
/// # Safety
///
/// `p` is null or a NUL-terminated string.
unsafe fn bytes<'a>(p: *const c_char) -> &'a [u8] {
    if p.is_null() {
        return b"";
    }
    // SAFETY: per the contract.
    unsafe { CStr::from_ptr(p) }.to_bytes()
}

/// Entries of the per-thread caches of names by address.
const CACHE: usize = 64;

thread_local! {
    /// NCCL's names are static strings: an address, once read, names the
    /// same string ever after. Direct-mapped by address.
    static SYMS: RefCell<[(usize, Sym); CACHE]> = const { RefCell::new([(0, Sym::EMPTY); CACHE]) };
    static FUNCS: RefCell<[(usize, Func); CACHE]> = const { RefCell::new([(0, Func::AllReduce); CACHE]) };
}

fn slot(p: *const c_char) -> usize {
    ((p as usize) >> 3 ^ (p as usize) >> 9) % CACHE
}

/// Looks `p` up in `cache`, else reads it with `read` and remembers it.
fn cached<T: Copy>(
    cache: &'static std::thread::LocalKey<RefCell<[(usize, T); CACHE]>>,
    p: *const c_char,
    read: impl FnOnce() -> T,
) -> T {
    if p.is_null() {
        return read();
    }
    let i = slot(p);
    let hit = cache.try_with(|c| {
        let entry = c.try_borrow().ok()?[i];
        (entry.0 == p as usize).then_some(entry.1)
    });
    if let Ok(Some(v)) = hit {
        return v;
    }
    let v = read();
    let _ = cache.try_with(|c| {
        if let Ok(mut all) = c.try_borrow_mut() {
            all[i] = (p as usize, v);
        }
    });
    v
}

/// # Safety
///
/// As [`bytes`].
unsafe fn sym(p: *const c_char) -> Sym {
    // SAFETY: per the contract.
    cached(&SYMS, p, || Sym::from_bytes(unsafe { bytes(p) }))
}

/// # Safety
///
/// As [`bytes`].
unsafe fn func(p: *const c_char) -> Func {
    // SAFETY: per the contract.
    cached(&FUNCS, p, || Func::from_bytes(unsafe { bytes(p) }))
}

/// # Safety
///
/// As [`bytes`].
unsafe fn opt_string(p: *const c_char) -> Option<String> {
    // SAFETY: per the contract.
    let b = unsafe { bytes(p) };
    (!b.is_empty()).then(|| String::from_utf8_lossy(b).into_owned())
}

/// # Safety
///
/// As [`bytes`], for `name`.
unsafe fn comm_tag(name: *const c_char, hash: u64) -> Option<CommTag> {
    // SAFETY: per the contract.
    let name = unsafe { opt_string(name) }.map(|n| Sym::intern(&n));
    (hash != 0 || name.is_some()).then_some(CommTag { hash, name })
}

fn proxy_op(d: &ProxyOpDescr) -> ProxyOp {
    ProxyOp {
        pid: d.pid,
        channel: d.channelId,
        peer: d.peer,
        steps: d.nSteps,
        chunk_size: d.chunkSize,
        is_send: d.isSend != 0,
    }
}

fn unsupported(t: u64) -> Descr {
    Descr::Unsupported { type_bits: t }
}

/// A [`CollLaunch`] from a v2–v6 collective descriptor (they differ in
/// type, not in these fields, save the channel count's name). Expands to
/// calls of `func` and `sym`: use inside `unsafe`, on a filled descriptor.
macro_rules! coll_launch {
    ($c:expr, $channels:ident, $comm:expr) => {{
        let c = $c;
        CollLaunch {
            seq: c.seqNumber,
            func: func(c.func),
            count: c.count as u64,
            root: c.root,
            datatype: sym(c.datatype),
            reduction: None,
            channels: c.$channels,
            warps: c.nWarps,
            algo: sym(c.algo),
            proto: sym(c.proto),
            comm: $comm,
        }
    }};
}

/// A [`P2pLaunch`] from a v2–v6 point-to-point descriptor; as
/// [`coll_launch`].
macro_rules! p2p_launch {
    ($p:expr, $channels:expr, $comm:expr) => {{
        let p = $p;
        P2pLaunch {
            func: func(p.func),
            count: p.count as u64,
            datatype: sym(p.datatype),
            peer: p.peer,
            channels: $channels,
            comm: $comm,
        }
    }};
}

// ---- descriptors ----

/// # Safety
///
/// `d` is NCCL's v1 descriptor: the union member its type names is set.
unsafe fn descr_v1(d: &EventDescr_v1) -> Descr {
    let t = u64::from(d.type_);
    // SAFETY: all union reads: per the contract, `type` says which member
    // NCCL filled; its strings are NUL-terminated.
    unsafe {
        match t {
            event::GROUP => Descr::Group,
            event::COLL => {
                let c = &d.u.coll;
                Descr::Coll(CollLaunch {
                    seq: c.seqNumber,
                    func: Func::by_id(c.func),
                    count: c.count as u64,
                    root: c.root,
                    datatype: Sym::datatype_by_id(c.datatype),
                    reduction: Some(Sym::redop_by_id(c.op)),
                    channels: c.nMaxChannels,
                    warps: c.nWarps,
                    algo: Sym::algo_by_id(c.algo),
                    proto: Sym::proto_by_id(c.proto),
                    comm: comm_tag(c.name, c.commHash),
                })
            }
            event::P2P => {
                let p = &d.u.p2p;
                Descr::P2p(P2pLaunch {
                    func: Func::by_id(p.func),
                    count: p.count as u64,
                    datatype: Sym::datatype_by_id(p.datatype),
                    peer: p.peer,
                    channels: 0,
                    comm: comm_tag(p.name, p.commHash),
                })
            }
            event::PROXY_OP => Descr::ProxyOp(proxy_op(&d.u.proxyOp)),
            event::PROXY_STEP => Descr::ProxyStep { step: d.u.proxyStep.step },
            event::PROXY_CTRL => Descr::ProxyCtrl,
            _ => unsupported(t),
        }
    }
}

/// # Safety
///
/// `d` is NCCL's v2 descriptor (see [`descr_v1`]).
unsafe fn descr_v2(d: &EventDescr_v2) -> Descr {
    let t = u64::from(d.type_);
    // SAFETY: all union reads and strings as in `descr_v1`.
    unsafe {
        match t {
            event::GROUP => Descr::Group,
            event::COLL => {
                let c = &d.u.coll;
                Descr::Coll(coll_launch!(c, nMaxChannels, comm_tag(c.name, c.commHash)))
            }
            event::P2P => Descr::P2p(p2p_v2(&d.u.p2p)),
            event::PROXY_OP => Descr::ProxyOp(proxy_op(&d.u.proxyOp)),
            event::PROXY_STEP => Descr::ProxyStep { step: d.u.proxyStep.step },
            event::PROXY_CTRL => Descr::ProxyCtrl,
            _ => unsupported(t),
        }
    }
}

/// # Safety
///
/// `p` is a filled v2/v3 point-to-point descriptor.
unsafe fn p2p_v2(p: &P2pDescr_v2) -> P2pLaunch {
    // SAFETY: per the contract.
    unsafe { p2p_launch!(p, 0, comm_tag(p.name, p.commHash)) }
}

/// # Safety
///
/// `d` is NCCL's v3 descriptor (see [`descr_v1`]).
unsafe fn descr_v3(d: &EventDescr_v3) -> Descr {
    let t = u64::from(d.type_);
    // SAFETY: all union reads and strings as in `descr_v1`.
    unsafe {
        match t {
            event::GROUP => Descr::Group,
            event::COLL => {
                let c = &d.u.coll;
                Descr::Coll(coll_launch!(c, nMaxChannels, comm_tag(c.name, c.commHash)))
            }
            event::P2P => Descr::P2p(p2p_v2(&d.u.p2p)),
            event::PROXY_OP => Descr::ProxyOp(proxy_op(&d.u.proxyOp)),
            event::PROXY_STEP => Descr::ProxyStep { step: d.u.proxyStep.step },
            event::PROXY_CTRL => Descr::ProxyCtrl,
            event::KERNEL_CH => Descr::KernelCh { channel: d.u.kernelCh.channelId, gpu_start: None },
            _ => unsupported(t),
        }
    }
}

/// # Safety
///
/// `d` is NCCL's v4 descriptor (see [`descr_v1`]).
unsafe fn descr_v4(d: &EventDescr_v4) -> Descr {
    let t = u64::from(d.type_);
    // SAFETY: all union reads and strings as in `descr_v1`.
    unsafe {
        match t {
            event::GROUP => Descr::Group,
            event::COLL => Descr::Coll(coll_launch!(&d.u.coll, nChannels, None)),
            event::P2P => Descr::P2p(p2p_launch!(&d.u.p2p, d.u.p2p.nChannels, None)),
            event::PROXY_OP => Descr::ProxyOp(proxy_op(&d.u.proxyOp)),
            event::PROXY_STEP => Descr::ProxyStep { step: d.u.proxyStep.step },
            event::PROXY_CTRL => Descr::ProxyCtrl,
            event::KERNEL_CH => {
                Descr::KernelCh { channel: d.u.kernelCh.channelId, gpu_start: Some(d.u.kernelCh.pTimer) }
            }
            _ => unsupported(t),
        }
    }
}

/// The members v5 and v6 share (v6 only adds copy-engine events).
macro_rules! descr_api {
    ($d:expr) => {{
        let d = $d;
        let t = d.type_;
        // SAFETY: all union reads and strings as in `descr_v1`.
        unsafe {
            match t {
                event::GROUP => Descr::Group,
                event::GROUP_API => {
                    Descr::GroupApi { depth: d.u.groupApi.groupDepth, graph_captured: d.u.groupApi.graphCaptured }
                }
                event::COLL_API => {
                    let c = &d.u.collApi;
                    Descr::CollApi(ApiCall {
                        func: func(c.func),
                        count: c.count as u64,
                        datatype: sym(c.datatype),
                        root: c.root,
                        graph_captured: c.graphCaptured,
                    })
                }
                event::P2P_API => {
                    let c = &d.u.p2pApi;
                    Descr::P2pApi(ApiCall {
                        func: func(c.func),
                        count: c.count as u64,
                        datatype: sym(c.datatype),
                        root: 0,
                        graph_captured: c.graphCaptured,
                    })
                }
                event::KERNEL_LAUNCH => Descr::KernelLaunch,
                event::COLL => Descr::Coll(coll_launch!(&d.u.coll, nChannels, None)),
                event::P2P => Descr::P2p(p2p_launch!(&d.u.p2p, d.u.p2p.nChannels, None)),
                event::PROXY_OP => Descr::ProxyOp(proxy_op(&d.u.proxyOp)),
                event::PROXY_STEP => Descr::ProxyStep { step: d.u.proxyStep.step },
                event::PROXY_CTRL => Descr::ProxyCtrl,
                event::KERNEL_CH => {
                    Descr::KernelCh { channel: d.u.kernelCh.channelId, gpu_start: Some(d.u.kernelCh.pTimer) }
                }
                _ => unsupported(t),
            }
        }
    }};
}

/// # Safety
///
/// `d` is NCCL's v5 descriptor (see [`descr_v1`]).
unsafe fn descr_v5(d: &EventDescr_v5) -> Descr {
    descr_api!(d)
}

/// # Safety
///
/// `d` is NCCL's v6 descriptor (see [`descr_v1`]).
unsafe fn descr_v6(d: &EventDescr_v6) -> Descr {
    descr_api!(d)
}

// ---- state arguments ----

/// v1–v3: proxy-op states carry bytes and steps so far, proxy-control
/// states the operations appended.
///
/// # Safety
///
/// `args` is null or NCCL's state arguments for `code`.
unsafe fn state_v1(code: c_int, args: *const EventStateArgs_v1) -> StateChange {
    let code = code as u32;
    let mut s = StateChange { code, ..StateChange::default() };
    // SAFETY: per the contract; the member read is the one `code` uses.
    if let Some(a) = unsafe { args.as_ref() } {
        if state::is_proxy_op(code) {
            // SAFETY: as above.
            let op = unsafe { a.proxyOp };
            s.trans_size = Some(op.transSize as u64);
            s.steps = Some(op.steps);
        } else if (state::PROXY_CTRL_IDLE..=state::PROXY_CTRL_APPEND_END).contains(&code) {
            // SAFETY: as above.
            s.appended = Some(unsafe { a.proxyCtrl.appendedProxyOps });
        }
    }
    s
}

/// v4+: proxy-step states carry the step's bytes, proxy-control states
/// the operations appended, a kernel channel's stop its GPU time.
///
/// # Safety
///
/// As [`state_v1`].
unsafe fn state_v4(code: c_int, args: *const EventStateArgs_v4) -> StateChange {
    let code = code as u32;
    let mut s = StateChange { code, ..StateChange::default() };
    // SAFETY: per the contract; the member read is the one `code` uses.
    if let Some(a) = unsafe { args.as_ref() } {
        if state::is_proxy_step(code) {
            // SAFETY: as above.
            s.trans_size = Some(unsafe { a.proxyStep } as u64);
        } else if (state::PROXY_CTRL_IDLE..=state::PROXY_CTRL_APPEND_END).contains(&code) {
            // SAFETY: as above.
            s.appended = Some(unsafe { a.proxyCtrl.appendedProxyOps });
        } else if code == state::KERNEL_CH_STOP {
            // SAFETY: as above.
            s.gpu_timer = Some(unsafe { a.kernelCh });
        }
    }
    s
}

// ---- entry points ----

/// # Safety
///
/// `d` is null or NCCL's descriptor; read through `convert`.
unsafe fn start_with<D>(d: *const D, parent: impl Fn(&D) -> (usize, i32), convert: unsafe fn(&D) -> Descr) -> Start {
    // SAFETY: per the contract.
    match unsafe { d.as_ref() } {
        Some(d) => {
            let (parent, rank) = parent(d);
            // SAFETY: per the contract.
            Start { descr: unsafe { convert(d) }, parent, rank }
        }
        None => Start { descr: Descr::Unsupported { type_bits: 0 }, parent: 0, rank: 0 },
    }
}

macro_rules! entry_points {
    ($start:ident, $state:ident, $descr_ty:ty, $convert:ident, $args_ty:ty, $state_conv:ident) => {
        unsafe extern "C" fn $start(ctx: *mut c_void, handle: *mut *mut c_void, d: *mut $descr_ty) -> NcclResult {
            // SAFETY: NCCL passes a valid out-pointer and its descriptor.
            unsafe {
                live::start(ctx, handle, || {
                    start_with(d.cast_const(), |d: &$descr_ty| (d.parentObj as usize, d.rank), $convert)
                })
            }
        }

        unsafe extern "C" fn $state(handle: *mut c_void, code: c_int, args: *mut $args_ty) -> NcclResult {
            // SAFETY: NCCL passes one of our handles and its arguments.
            unsafe { live::state(handle, || $state_conv(code, args.cast_const())) }
        }
    };
}

entry_points!(start_v1, state_v1_fn, EventDescr_v1, descr_v1, EventStateArgs_v1, state_v1);
entry_points!(start_v2, state_v2_fn, EventDescr_v2, descr_v2, EventStateArgs_v1, state_v1);
entry_points!(start_v3, state_v3_fn, EventDescr_v3, descr_v3, EventStateArgs_v1, state_v1);
entry_points!(start_v4, state_v4_fn, EventDescr_v4, descr_v4, EventStateArgs_v4, state_v4);
entry_points!(start_v5, state_v5_fn, EventDescr_v5, descr_v5, EventStateArgs_v4, state_v4);
entry_points!(start_v6, state_v6_fn, EventDescr_v6, descr_v6, EventStateArgs_v4, state_v4);

unsafe extern "C" fn stop(handle: *mut c_void) -> NcclResult {
    // SAFETY: NCCL passes one of our handles, once.
    unsafe { live::stop(handle) }
}

unsafe extern "C" fn finalize(ctx: *mut c_void) -> NcclResult {
    live::finalize(ctx)
}

unsafe extern "C" fn init_v1(ctx: *mut *mut c_void, mask: *mut c_int) -> NcclResult {
    // SAFETY: NCCL passes valid out-pointers.
    unsafe { live::init(ctx, mask, || InitArgs { version: 1, ..InitArgs::default() }) }
}

unsafe extern "C" fn init_v2(ctx: *mut *mut c_void, mask: *mut c_int) -> NcclResult {
    // SAFETY: as above.
    unsafe { live::init(ctx, mask, || InitArgs { version: 2, ..InitArgs::default() }) }
}

unsafe extern "C" fn init_v3(ctx: *mut *mut c_void, mask: *mut c_int) -> NcclResult {
    // SAFETY: as above.
    unsafe { live::init(ctx, mask, || InitArgs { version: 3, ..InitArgs::default() }) }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn init_v4(
    ctx: *mut *mut c_void,
    mask: *mut c_int,
    comm_name: *const c_char,
    comm_hash: u64,
    n_nodes: c_int,
    nranks: c_int,
    rank: c_int,
    _log: DebugLogger,
) -> NcclResult {
    // SAFETY: NCCL passes valid out-pointers and a NUL-terminated name or
    // null.
    unsafe {
        live::init(ctx, mask, || InitArgs {
            version: 4,
            comm_id: Some(comm_hash),
            name: opt_string(comm_name),
            n_nodes: Some(n_nodes),
            nranks: Some(nranks),
            rank: Some(rank),
        })
    }
}

/// v5 and v6 take the same arguments.
#[allow(clippy::too_many_arguments)]
unsafe fn init_api(
    version: u32,
    ctx: *mut *mut c_void,
    comm_id: u64,
    mask: *mut c_int,
    comm_name: *const c_char,
    n_nodes: c_int,
    nranks: c_int,
    rank: c_int,
) -> NcclResult {
    // SAFETY: as in `init_v4`.
    unsafe {
        live::init(ctx, mask, || InitArgs {
            version,
            comm_id: Some(comm_id),
            name: opt_string(comm_name),
            n_nodes: Some(n_nodes),
            nranks: Some(nranks),
            rank: Some(rank),
        })
    }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn init_v5(
    ctx: *mut *mut c_void,
    comm_id: u64,
    mask: *mut c_int,
    comm_name: *const c_char,
    n_nodes: c_int,
    nranks: c_int,
    rank: c_int,
    _log: DebugLogger,
) -> NcclResult {
    // SAFETY: as in `init_v4`.
    unsafe { init_api(5, ctx, comm_id, mask, comm_name, n_nodes, nranks, rank) }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn init_v6(
    ctx: *mut *mut c_void,
    comm_id: u64,
    mask: *mut c_int,
    comm_name: *const c_char,
    n_nodes: c_int,
    nranks: c_int,
    rank: c_int,
    _log: DebugLogger,
) -> NcclResult {
    // SAFETY: as in `init_v4`.
    unsafe { init_api(6, ctx, comm_id, mask, comm_name, n_nodes, nranks, rank) }
}

/// NCCL 2.29 and later.
#[unsafe(no_mangle)]
pub static ncclProfiler_v6: Profiler_v6 = Profiler_v6 {
    name: NAME.as_ptr(),
    init: init_v6,
    startEvent: start_v6,
    stopEvent: stop,
    recordEventState: state_v6_fn,
    finalize,
};

/// NCCL 2.28.
#[unsafe(no_mangle)]
pub static ncclProfiler_v5: Profiler_v5 = Profiler_v5 {
    name: NAME.as_ptr(),
    init: init_v5,
    startEvent: start_v5,
    stopEvent: stop,
    recordEventState: state_v5_fn,
    finalize,
};

/// NCCL 2.27.
#[unsafe(no_mangle)]
pub static ncclProfiler_v4: Profiler_v4 = Profiler_v4 {
    name: NAME.as_ptr(),
    init: init_v4,
    startEvent: start_v4,
    stopEvent: stop,
    recordEventState: state_v4_fn,
    finalize,
};

/// NCCL 2.26.
#[unsafe(no_mangle)]
pub static ncclProfiler_v3: Profiler_v3 = Profiler_v3 {
    name: NAME.as_ptr(),
    init: init_v3,
    startEvent: start_v3,
    stopEvent: stop,
    recordEventState: state_v3_fn,
    finalize,
};

/// NCCL 2.24 and 2.25.
#[unsafe(no_mangle)]
pub static ncclProfiler_v2: Profiler_v2 = Profiler_v2 {
    name: NAME.as_ptr(),
    init: init_v2,
    startEvent: start_v2,
    stopEvent: stop,
    recordEventState: state_v2_fn,
    finalize,
};

/// NCCL 2.23.
#[unsafe(no_mangle)]
pub static ncclProfiler_v1: Profiler_v1 = Profiler_v1 {
    name: NAME.as_ptr(),
    init: init_v1,
    startEvent: start_v1,
    stopEvent: stop,
    recordEventState: state_v1_fn,
    finalize,
};

// ---- NCCL's NVTX ranges, from gputrace's NVTX library ----
//
// NCCL annotates its API functions with NVTX ranges (domain "NCCL").
// gputrace's NVTX library, which receives them, finds these three
// functions (it opens this library by the path in NCCL_PROFILER_PLUGIN)
// and hands the ranges over instead of recording them itself, so that
// the plugin records each call once, as the user made it
// (`docs/nccl.md`, *NCCL's NVTX ranges*).

/// 1 when the plugin records: the NVTX library then hands NCCL's ranges
/// over; 0 and it records them itself.
#[unsafe(no_mangle)]
pub extern "C" fn gputrace_nccl_nvtx_recording() -> c_int {
    c_int::from(live::nvtx_recording())
}

/// Reads a payload: `schema_id` and `size` bytes at `data`.
///
/// # Safety
///
/// `data` is null or points to `size` readable bytes.
unsafe fn nvtx_payload(schema_id: u64, data: *const c_void, size: usize) -> Option<NvtxPayload> {
    if data.is_null() || size == 0 || size > 4096 {
        return None;
    }
    // SAFETY: per the contract.
    let bytes = unsafe { std::slice::from_raw_parts(data.cast::<u8>(), size) };
    NvtxPayload::decode(schema_id, bytes)
}

/// One of NCCL's NVTX ranges begins on the calling thread: its message
/// (`len` bytes of UTF-8 at `name`) and its payload (`schema_id`, `size`
/// bytes at `data`; null when it has none).
///
/// # Safety
///
/// `name` points to `len` readable bytes; `data` is null or points to
/// `size` readable bytes; both for the duration of the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gputrace_nccl_nvtx_push(
    name: *const c_char,
    len: usize,
    schema_id: u64,
    data: *const c_void,
    size: usize,
) {
    live::nvtx_push(|| {
        let text: &[u8] = if name.is_null() {
            &[]
        } else {
            // SAFETY: per the contract.
            unsafe { std::slice::from_raw_parts(name.cast::<u8>(), len) }
        };
        // SAFETY: per the contract.
        let payload = unsafe { nvtx_payload(schema_id, data, size) };
        NvtxRange { name: Sym::from_bytes(text), payload }
    });
}

/// The innermost of NCCL's NVTX ranges on the calling thread ends, with
/// the payload NCCL gave at its end (null: none).
///
/// # Safety
///
/// `data` is null or points to `size` readable bytes for the duration of
/// the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn gputrace_nccl_nvtx_pop(schema_id: u64, data: *const c_void, size: usize) {
    // SAFETY: per the contract.
    live::nvtx_pop(|| unsafe { nvtx_payload(schema_id, data, size) });
}
