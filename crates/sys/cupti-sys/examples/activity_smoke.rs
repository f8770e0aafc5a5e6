//! Checks the record tables against a real GPU: loads CUPTI (as
//! `Cupti::find_and_load` finds it, or the LIBRARY given), enables a few
//! activity kinds, does some driver-API work (copies, a memset, a kernel
//! JIT-compiled from PTX), and for every record checks that the distance to
//! the next record in CUPTI's buffer is the size of the struct
//! `CuptiVersion::record_struct` names for its kind. Exits 1 on a mismatch.
//!
//! ```text
//! cargo run -p cupti-sys --example activity_smoke [LIBRARY]
//! ```

use std::collections::BTreeMap;
use std::ffi::{CStr, c_char, c_int, c_uint, c_void};
use std::process::ExitCode;
use std::sync::{Mutex, OnceLock};

use cupti_sys::{CUpti_Activity, Cupti, common as c, v12_9};

static CUPTI: OnceLock<Cupti> = OnceLock::new();
/// What the records of one kind looked like.
#[derive(Default)]
struct Seen {
    count: usize,
    /// Distances from each record to the next in its buffer.
    gaps: Vec<usize>,
    /// The first record, described.
    sample: String,
}

static SEEN: Mutex<BTreeMap<u32, Seen>> = Mutex::new(BTreeMap::new());

const BUFFER: usize = 1 << 20;

unsafe extern "C" fn buffer_requested(buffer: *mut *mut u8, size: *mut usize, max_records: *mut usize) {
    let layout = std::alloc::Layout::from_size_align(BUFFER, 8).unwrap();
    // SAFETY: the layout has a nonzero size; CUPTI passes valid pointers.
    unsafe {
        *buffer = std::alloc::alloc(layout);
        *size = if (*buffer).is_null() { 0 } else { BUFFER };
        *max_records = 0;
    }
}

unsafe extern "C" fn buffer_completed(_: c::CUcontext, _: u32, buffer: *mut u8, _: usize, valid: usize) {
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: CUPTI hands back a buffer from buffer_requested with
        // `valid` bytes of records.
        unsafe { walk(buffer, valid) }
    });
    let layout = std::alloc::Layout::from_size_align(BUFFER, 8).unwrap();
    // SAFETY: allocated in buffer_requested with this layout.
    unsafe { std::alloc::dealloc(buffer, layout) };
}

/// # Safety
/// `buffer` holds `valid` bytes of CUPTI records.
unsafe fn walk(buffer: *mut u8, valid: usize) {
    let cupti = CUPTI.get().unwrap();
    let mut record: *mut CUpti_Activity = std::ptr::null_mut();
    let mut previous: Option<(*mut CUpti_Activity, u32)> = None;
    let mut seen = SEEN.lock().unwrap();
    loop {
        // SAFETY: walks the buffer as CUPTI documents.
        let result = unsafe { (cupti.activity_get_next_record)(buffer, valid, &mut record) };
        if result != c::CUPTI_SUCCESS {
            break;
        }
        // SAFETY: CUPTI returned a record; its kind comes first.
        let kind = unsafe { (*record).kind };
        if let Some((prev, prev_kind)) = previous {
            let gap = record as usize - prev as usize;
            seen.get_mut(&prev_kind).unwrap().gaps.push(gap);
        }
        let entry = seen.entry(kind).or_default();
        entry.count += 1;
        if entry.sample.is_empty() {
            // SAFETY: the struct for `kind` starts with these fields in every
            // release (tests/layout.rs, fields_gputrace_reads_share_offsets).
            entry.sample = unsafe { describe(kind, record) };
        }
        previous = Some((record, kind));
    }
}

/// # Safety
/// `record` is a CUPTI record of `kind`.
unsafe fn describe(kind: u32, record: *const CUpti_Activity) -> String {
    let text = |p: *const c_char| {
        if p.is_null() {
            "-".to_string()
        } else {
            // SAFETY: CUPTI's names are NUL-terminated and outlive the buffer.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        }
    };
    // SAFETY: per kind, the oldest struct's fields, shared by all versions.
    unsafe {
        match kind {
            c::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL | c::CUPTI_ACTIVITY_KIND_KERNEL => {
                let k = &*(record as *const v12_9::CUpti_ActivityKernel9);
                format!(
                    "{} grid {}x{}x{} block {}x{}x{} regs {} dev {} ctx {} stream {} {} ns",
                    text(k.name),
                    k.gridX,
                    k.gridY,
                    k.gridZ,
                    k.blockX,
                    k.blockY,
                    k.blockZ,
                    k.registersPerThread,
                    k.deviceId,
                    k.contextId,
                    k.streamId,
                    k.end - k.start
                )
            }
            c::CUPTI_ACTIVITY_KIND_MEMCPY => {
                let m = &*(record as *const v12_9::CUpti_ActivityMemcpy5);
                format!(
                    "{} bytes copyKind {} src {} dst {} {} ns",
                    m.bytes,
                    m.copyKind,
                    m.srcKind,
                    m.dstKind,
                    m.end - m.start
                )
            }
            c::CUPTI_ACTIVITY_KIND_MEMSET => {
                let m = &*(record as *const v12_9::CUpti_ActivityMemset4);
                format!("{} bytes value {} memoryKind {} {} ns", m.bytes, m.value, m.memoryKind, m.end - m.start)
            }
            c::CUPTI_ACTIVITY_KIND_DRIVER => {
                let a = &*(record as *const v12_9::CUpti_ActivityAPI);
                format!("cbid {} pid {} tid {} {} ns", a.cbid, a.processId, a.threadId, a.end - a.start)
            }
            c::CUPTI_ACTIVITY_KIND_DEVICE => {
                let d = &*(record as *const v12_9::CUpti_ActivityDevice4);
                format!(
                    "{} id {} sm {}.{} SMs {} mem {} B",
                    text(d.name),
                    d.id,
                    d.computeCapabilityMajor,
                    d.computeCapabilityMinor,
                    d.numMultiprocessors,
                    d.globalMemorySize
                )
            }
            c::CUPTI_ACTIVITY_KIND_CONTEXT => {
                let x = &*(record as *const v12_9::CUpti_ActivityContext);
                format!("context {} device {} null stream {}", x.contextId, x.deviceId, x.nullStreamId)
            }
            c::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION => {
                let s = &*(record as *const v12_9::CUpti_ActivitySynchronization);
                format!("type {} ctx {} stream {}", s.type_, s.contextId, s.streamId)
            }
            _ => String::new(),
        }
    }
}

const PTX: &str = "
.version 7.0
.target sm_80
.address_size 64
.visible .entry gputrace_smoke(.param .u64 out)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [out];
    cvta.to.global.u64 %rd2, %rd1;
    mov.u32 %r1, %tid.x;
    st.global.u32 [%rd2], %r1;
    ret;
}
\0";

type CuResult = c_int;

/// The driver-API work; returns the first failing call.
fn gpu_work() -> Result<(), String> {
    use libloading::Library;
    // SAFETY: libcuda's initializers only set up its own state.
    let cuda = unsafe { Library::new("libcuda.so.1") }.map_err(|e| e.to_string())?;
    macro_rules! sym {
        ($name:literal: $ty:ty) => {
            // SAFETY: the type is cuda.h's for this function.
            *unsafe { cuda.get::<$ty>(concat!($name, "\0").as_bytes()) }.map_err(|e| e.to_string())?
        };
    }
    let init = sym!("cuInit": unsafe extern "C" fn(c_uint) -> CuResult);
    let device_get = sym!("cuDeviceGet": unsafe extern "C" fn(*mut c_int, c_int) -> CuResult);
    let retain = sym!("cuDevicePrimaryCtxRetain": unsafe extern "C" fn(*mut c::CUcontext, c_int) -> CuResult);
    let set_current = sym!("cuCtxSetCurrent": unsafe extern "C" fn(c::CUcontext) -> CuResult);
    let alloc = sym!("cuMemAlloc_v2": unsafe extern "C" fn(*mut u64, usize) -> CuResult);
    let htod = sym!("cuMemcpyHtoD_v2": unsafe extern "C" fn(u64, *const c_void, usize) -> CuResult);
    let dtoh = sym!("cuMemcpyDtoH_v2": unsafe extern "C" fn(*mut c_void, u64, usize) -> CuResult);
    let memset = sym!("cuMemsetD8_v2": unsafe extern "C" fn(u64, u8, usize) -> CuResult);
    let load = sym!("cuModuleLoadData": unsafe extern "C" fn(*mut *mut c_void, *const c_void) -> CuResult);
    let function =
        sym!("cuModuleGetFunction": unsafe extern "C" fn(*mut *mut c_void, *mut c_void, *const c_char) -> CuResult);
    type Launch = unsafe extern "C" fn(
        *mut c_void,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        c_uint,
        *mut c_void,
        *mut *mut c_void,
        *mut *mut c_void,
    ) -> CuResult;
    let launch = sym!("cuLaunchKernel": Launch);
    let synchronize = sym!("cuCtxSynchronize": unsafe extern "C" fn() -> CuResult);

    let check = |name: &str, result: CuResult| {
        if result == 0 { Ok(()) } else { Err(format!("{name} failed: CUresult {result}")) }
    };
    let (mut device, mut context, mut memory) = (0, std::ptr::null_mut(), 0u64);
    let (mut module, mut kernel) = (std::ptr::null_mut(), std::ptr::null_mut());
    let host = vec![7u8; 1 << 20];
    let mut back = vec![0u8; 1 << 20];
    // SAFETY: each call gets valid pointers and sizes within the buffers.
    unsafe {
        check("cuInit", init(0))?;
        check("cuDeviceGet", device_get(&mut device, 0))?;
        check("cuDevicePrimaryCtxRetain", retain(&mut context, device))?;
        check("cuCtxSetCurrent", set_current(context))?;
        check("cuMemAlloc", alloc(&mut memory, host.len()))?;
        check("cuMemcpyHtoD", htod(memory, host.as_ptr().cast(), host.len()))?;
        check("cuMemsetD8", memset(memory, 0, host.len()))?;
        check("cuModuleLoadData", load(&mut module, PTX.as_ptr().cast()))?;
        check("cuModuleGetFunction", function(&mut kernel, module, c"gputrace_smoke".as_ptr()))?;
        let mut arg = memory;
        let mut params = [(&raw mut arg).cast::<c_void>()];
        check(
            "cuLaunchKernel",
            launch(kernel, 2, 1, 1, 64, 1, 1, 0, std::ptr::null_mut(), params.as_mut_ptr(), std::ptr::null_mut()),
        )?;
        check("cuCtxSynchronize", synchronize())?;
        check("cuMemcpyDtoH", dtoh(back.as_mut_ptr().cast(), memory, back.len()))?;
    }
    std::mem::forget(cuda);
    Ok(())
}

fn main() -> ExitCode {
    let library = std::env::args_os().nth(1).map(std::path::PathBuf::from);
    let cupti = match Cupti::find_and_load(library.as_deref()) {
        Ok(cupti) => CUPTI.get_or_init(|| cupti),
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::FAILURE;
        }
    };
    let version = cupti.version();
    println!("{version} from {}", cupti.path().display());
    let kinds = [
        c::CUPTI_ACTIVITY_KIND_DEVICE,
        c::CUPTI_ACTIVITY_KIND_CONTEXT,
        c::CUPTI_ACTIVITY_KIND_DRIVER,
        c::CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
        c::CUPTI_ACTIVITY_KIND_MEMCPY,
        c::CUPTI_ACTIVITY_KIND_MEMSET,
        c::CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
    ];
    // SAFETY: the callbacks match CUPTI's types and do not unwind.
    let setup = unsafe {
        cupti
            .check(
                "cuptiActivityRegisterCallbacks",
                (cupti.activity_register_callbacks)(Some(buffer_requested), Some(buffer_completed)),
            )
            .and_then(|()| {
                kinds.iter().try_for_each(|&kind| cupti.check("cuptiActivityEnable", (cupti.activity_enable)(kind)))
            })
    };
    if let Err(error) = setup {
        eprintln!("error: {error}");
        return ExitCode::FAILURE;
    }
    let work = gpu_work();
    // SAFETY: plain call; flushes every buffer through buffer_completed.
    let flushed = cupti
        .check("cuptiActivityFlushAll", unsafe { (cupti.activity_flush_all)(c::CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) });
    if let Err(error) = work.map_err(|e| e.to_string()).and(flushed.map_err(|e| e.to_string())) {
        eprintln!("error: {error}");
        return ExitCode::FAILURE;
    }

    let mut ok = true;
    for (kind, Seen { count, gaps, sample }) in SEEN.lock().unwrap().iter() {
        let Some(record) = version.record_struct(*kind) else {
            println!("kind {kind}: {count} records, not in the table");
            continue;
        };
        let expected = record.size().next_multiple_of(8);
        let mut distinct = gaps.clone();
        distinct.sort_unstable();
        distinct.dedup();
        let verdict = if distinct.iter().all(|&g| g == expected) { "ok" } else { "MISMATCH" };
        ok &= verdict == "ok";
        println!(
            "kind {kind:>2} {:<34} {count:>3} records, struct {expected} B, gaps {distinct:?} {verdict}: {sample}",
            record.c_name()
        );
    }
    if ok { ExitCode::SUCCESS } else { ExitCode::FAILURE }
}
