//! Names of what the agent records: demangled kernel names, API function
//! names without their version suffixes, and the fixed region names of
//! copies, memsets and synchronizations.

use raw::CopyKind;

/// A kernel's demangled name (`void saxpy<float>(int, float, float*)`);
/// the input when it is not a mangled C++ name.
pub fn demangle(mangled: &str) -> String {
    if !mangled.starts_with("_Z") {
        return mangled.to_string();
    }
    match cpp_demangle::Symbol::new(mangled) {
        Ok(sym) => sym.to_string(),
        Err(_) => mangled.to_string(),
    }
}

/// `cudaLaunchKernel_v7000` → `cudaLaunchKernel`, `cuMemcpyHtoD_v2` →
/// `cuMemcpyHtoD`: CUPTI's callback names carry the API version the call
/// was introduced in; the function a user called has none.
pub fn api_name(callback_name: &str) -> &str {
    match callback_name.rfind("_v") {
        Some(i)
            if i > 0 && callback_name[i + 2..].chars().all(|c| c.is_ascii_digit()) && i + 2 < callback_name.len() =>
        {
            &callback_name[..i]
        }
        _ => callback_name,
    }
}

/// The runtime calls `GPUTRACE_CUDA_ENABLE=runtime` records (by name, as
/// [`api_name`] gives it, without a `_ptds`/`_ptsz` suffix): those that
/// create, order or wait for GPU work, and the few that make or capture
/// streams. Matched by prefix: `cudaMemcpy` holds every copy
/// (`cudaMemcpy2DAsync`, `cudaMemcpyPeer`, `cudaMemcpyToSymbol`, ...).
/// Getters, queries, attribute calls and device selection are what
/// PyTorch and NCCL make most of around every kernel
/// (`cudaGetDevice`, `cudaStreamIsCapturing`, `cudaSetDevice`,
/// `cudaEventQuery`...): `runtime-all` records those too.
const WORK_CALLS: &[&str] = &[
    "cudaLaunch",
    "cudaMemcpy",
    "cudaMemset",
    "cudaMalloc",
    "cudaFree",
    "cudaHostAlloc",
    "cudaHostRegister",
    "cudaHostUnregister",
    "cudaMemPrefetchAsync",
    "cudaGraphLaunch",
    "cudaGraphUpload",
    "cudaDeviceSynchronize",
    "cudaThreadSynchronize",
    "cudaStreamSynchronize",
    "cudaEventSynchronize",
    "cudaStreamWaitEvent",
    "cudaEventRecord",
    "cudaStreamCreate",
    "cudaStreamDestroy",
    "cudaStreamBeginCapture",
    "cudaStreamEndCapture",
    "cudaSignalExternalSemaphoresAsync",
    "cudaWaitExternalSemaphoresAsync",
];

/// Whether the runtime call `name` ([`api_name`]'s) is one `runtime`
/// records (see [`WORK_CALLS`]).
pub fn is_work_call(name: &str) -> bool {
    let name = name.strip_suffix("_ptds").or_else(|| name.strip_suffix("_ptsz")).unwrap_or(name);
    WORK_CALLS.iter().any(|p| name.starts_with(p))
}

/// The region of a copy of `kind`.
pub fn copy_region(kind: CopyKind) -> &'static str {
    match kind {
        CopyKind::HostToDevice => "[CUDA memcpy HtoD]",
        CopyKind::DeviceToHost => "[CUDA memcpy DtoH]",
        CopyKind::DeviceToDevice => "[CUDA memcpy DtoD]",
        CopyKind::HostToHost => "[CUDA memcpy HtoH]",
        CopyKind::PeerToPeer => "[CUDA memcpy PtoP]",
        CopyKind::Other => "[CUDA memcpy]",
    }
}

pub const MEMSET_REGION: &str = "[CUDA memset]";

/// The region of a synchronization of CUPTI's type `kind`.
pub fn sync_region(kind: u32) -> &'static str {
    match kind {
        1 => "[CUDA sync: event]",
        2 => "[CUDA sync: stream wait event]",
        3 => "[CUDA sync: stream]",
        4 => "[CUDA sync: context]",
        _ => "[CUDA sync]",
    }
}

/// CUPTI's copy kind (`CUpti_ActivityMemcpyKind`) as gputrace's.
pub fn copy_kind(cupti: u8) -> CopyKind {
    match cupti {
        1 | 3 => CopyKind::HostToDevice,
        2 | 4 => CopyKind::DeviceToHost,
        5..=8 => CopyKind::DeviceToDevice,
        9 => CopyKind::HostToHost,
        10 => CopyKind::PeerToPeer,
        _ => CopyKind::Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn work_calls_are_those_that_make_or_wait_for_gpu_work() {
        for name in [
            "cudaLaunchKernel",
            "cudaLaunchKernelExC",
            "cudaMemcpyAsync",
            "cudaMemcpy2DAsync_ptsz",
            "cudaMemcpyPeerAsync",
            "cudaMemsetAsync",
            "cudaMalloc",
            "cudaMallocAsync_ptsz",
            "cudaFreeHost",
            "cudaStreamSynchronize",
            "cudaEventRecordWithFlags",
            "cudaStreamWaitEvent_ptsz",
            "cudaGraphLaunch",
            "cudaStreamBeginCapture",
        ] {
            assert!(is_work_call(name), "{name}");
        }
        for name in [
            "cudaGetDevice",
            "cudaSetDevice",
            "cudaStreamIsCapturing",
            "cudaEventQuery",
            "cudaStreamQuery",
            "cudaGetLastError",
            "cudaPeekAtLastError",
            "cudaDeviceGetAttribute",
            "cudaPointerGetAttributes",
            "cudaEventCreateWithFlags",
            "cudaFuncGetAttributes",
            "cudaGetDeviceCount",
        ] {
            assert!(!is_work_call(name), "{name}");
        }
    }

    #[test]
    fn kernel_names_are_demangled() {
        assert_eq!(demangle("_Z6kernelPfi"), "kernel(float*, int)");
        assert_eq!(demangle("_Z5saxpyIfEviT_PS0_"), "void saxpy<float>(int, float, float*)");
        assert_eq!(demangle("plain_c_kernel"), "plain_c_kernel");
        assert_eq!(demangle("_Zgarbage"), "_Zgarbage");
    }

    #[test]
    fn api_versions_are_dropped() {
        assert_eq!(api_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
        assert_eq!(api_name("cuMemcpyHtoD_v2"), "cuMemcpyHtoD");
        assert_eq!(api_name("cudaMemcpy_v3020"), "cudaMemcpy");
        assert_eq!(api_name("cudaMemcpy_ptds_v7000"), "cudaMemcpy_ptds");
        assert_eq!(api_name("cuInit"), "cuInit");
        assert_eq!(api_name("cuCtxCreate_v"), "cuCtxCreate_v");
    }

    #[test]
    fn copy_kinds_map() {
        assert_eq!(copy_kind(1), CopyKind::HostToDevice);
        assert_eq!(copy_kind(8), CopyKind::DeviceToDevice);
        assert_eq!(copy_kind(10), CopyKind::PeerToPeer);
        assert_eq!(copy_kind(0), CopyKind::Other);
    }
}
