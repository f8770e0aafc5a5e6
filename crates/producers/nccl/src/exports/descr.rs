//! Each interface version's descriptors and state arguments, read from C
//! memory into the plugin's [`model`](crate::model).

use std::cell::RefCell;
use std::ffi::{CStr, c_char, c_int};

use crate::abi::*;
use crate::model::{ApiCall, CollLaunch, CommTag, Descr, Func, P2pLaunch, ProxyOp, StateChange, Sym, state};

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
pub(super) unsafe fn opt_string(p: *const c_char) -> Option<String> {
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
pub(super) unsafe fn descr_v1(d: &EventDescr_v1) -> Descr {
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
pub(super) unsafe fn descr_v2(d: &EventDescr_v2) -> Descr {
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
pub(super) unsafe fn descr_v3(d: &EventDescr_v3) -> Descr {
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
pub(super) unsafe fn descr_v4(d: &EventDescr_v4) -> Descr {
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
pub(super) unsafe fn descr_v5(d: &EventDescr_v5) -> Descr {
    descr_api!(d)
}

/// # Safety
///
/// `d` is NCCL's v6 descriptor (see [`descr_v1`]).
pub(super) unsafe fn descr_v6(d: &EventDescr_v6) -> Descr {
    descr_api!(d)
}

// ---- state arguments ----

/// v1–v3: proxy-op states carry bytes and steps so far, proxy-control
/// states the operations appended.
///
/// # Safety
///
/// `args` is null or NCCL's state arguments for `code`.
pub(super) unsafe fn state_v1(code: c_int, args: *const EventStateArgs_v1) -> StateChange {
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
pub(super) unsafe fn state_v4(code: c_int, args: *const EventStateArgs_v4) -> StateChange {
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
