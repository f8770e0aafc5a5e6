//! CUPTI's activity buffers: handed out, taken back full (queued for the
//! agent's thread), converted into events, and the names the converter
//! asks of the live process.

use super::*;

pub(super) unsafe extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    let len = AGENT.get().map_or(1 << 20, |a| a.buffer_size);
    let layout = Layout::from_size_align(len, ALIGN).expect("valid layout");
    // SAFETY: `layout` has a non-zero size.
    let ptr = if crate::lost::refuse_buffer() { std::ptr::null_mut() } else { unsafe { alloc(layout) } };
    // SAFETY: CUPTI passes valid out-pointers.
    unsafe {
        *buffer = ptr;
        *size = if ptr.is_null() { 0 } else { len };
        *max_records = 0;
    }
}

/// Records CUPTI dropped that no capture holds yet: the next capture
/// written holds them (a drop reported with an empty buffer goes with the
/// next buffer that has records).
pub(super) static DROPPED_FOR_CAPTURE: AtomicU64 = AtomicU64::new(0);

pub(super) unsafe extern "C" fn buffer_completed(
    ctx: sys::CUcontext,
    stream: u32,
    buffer: *mut u8,
    size: usize,
    valid: usize,
) {
    guarded(|agent| {
        // SAFETY: `ctx` is the one CUPTI passed with this buffer.
        if let Ok(dropped) = unsafe { agent.cupti.dropped_records(ctx, stream) }
            && dropped > 0
        {
            crate::lost::note(crate::lost::SourceLoss::CuptiDropped, dropped as u64);
            if agent.capture.is_some() {
                DROPPED_FOR_CAPTURE.fetch_add(dropped as u64, Ordering::Relaxed);
            }
        }
    });
    if buffer.is_null() {
        return;
    }
    let done = Completed { buffer: buffer as usize, size, valid };
    if GUARD.off() || AGENT.get().is_none() {
        release(done);
    } else if let Err(done) = handoff::queue(done, convert) {
        convert(done);
    }
}

/// Converts a completed buffer's records and frees it.
pub(super) fn convert(done: Completed) {
    guarded(|agent| {
        if done.valid > 0 {
            // SAFETY: CUPTI handed back the buffer we allocated, `valid`
            // bytes of it filled; nothing else uses it any more.
            let records = unsafe { agent.records(done.buffer as *mut u8, done.valid) };
            agent.process(&records.0, &records.1);
        }
    });
    release(done);
}

/// Frees a buffer of `buffer_requested`'s.
pub(super) fn release(done: Completed) {
    if done.size > 0 {
        // SAFETY: allocated in `buffer_requested` with this size and
        // alignment, and handed back by CUPTI once.
        unsafe { dealloc(done.buffer as *mut u8, Layout::from_size_align(done.size, ALIGN).expect("valid layout")) };
    }
}

/// Whether a record's work or call started inside a recording window;
/// records without a time (devices, contexts, NVLink topology) are
/// definitions and always kept, as are allocations and frees (the memory
/// in use is their running sum).
pub(super) fn in_window(r: &Record) -> bool {
    let start = match r {
        Record::Api { start, .. } | Record::Sync { start, .. } => *start,
        Record::Kernel { span, .. }
        | Record::Memcpy { span, .. }
        | Record::PeerCopy { span, .. }
        | Record::Memset { span, .. }
        | Record::GraphTrace { span, .. } => span.start,
        Record::Uvm(u) => u.start,
        _ => return true,
    };
    recorder::window::contains(start)
}

/// Names resolved through CUPTI, for live records.
pub(super) struct LiveNames<'a> {
    pub(super) agent: &'a Agent,
    pub(super) cache: &'a mut HashMap<(ApiDomain, u32), Option<String>>,
}

/// The string a live record's name pointer points to.
pub(super) fn c_string(ptr: u64) -> Option<String> {
    if ptr == 0 {
        return None;
    }
    // SAFETY: a non-null name pointer in a live record points to a
    // NUL-terminated string CUPTI keeps for the life of the process.
    Some(unsafe { CStr::from_ptr(ptr as *const c_char) }.to_string_lossy().into_owned())
}

impl Strings for LiveNames<'_> {
    fn get(&self, ptr: u64) -> Option<String> {
        c_string(ptr)
    }
}

impl Names for LiveNames<'_> {
    fn api(&self, domain: ApiDomain, cbid: u32) -> Option<String> {
        if let Some(n) = self.cache.get(&(domain, cbid)) {
            return n.clone();
        }
        self.agent.api_name(domain, cbid)
    }

    fn sync_thread(&self, correlation: u32) -> Option<u32> {
        crate::api::sync_thread(correlation)
    }

    fn own_thread(&self, tid: u32) -> bool {
        OWN_THREADS.lock().map(|own| own.contains(&tid)).unwrap_or(false)
    }

    fn copy_ends(&self, correlation: u32) -> Option<crate::copies::Ends> {
        // Without `memory` no copy call is seen: no lock to take per copy.
        if !self.agent.enabled.memory {
            return None;
        }
        self.agent.copies.take(correlation)
    }
}
