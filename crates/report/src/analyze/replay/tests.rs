//! The pass's names and call-path tree.
use super::gpu::is_kernel_launch;
use super::host::{Rule, copy_rule, is_sync_api};
use super::*;

#[test]
fn names_say_what_a_call_is() {
    assert!(is_sync_api("cudaStreamSynchronize") && is_sync_api("cuCtxSynchronize"));
    assert!(!is_sync_api("cudaStreamWaitEvent"));
    assert_eq!(copy_rule("cudaMemcpy"), Rule::SyncMemcpy);
    assert_eq!(copy_rule("cudaMemcpy2D"), Rule::SyncMemcpy);
    assert_eq!(copy_rule("cuMemcpyDtoH"), Rule::SyncMemcpy);
    assert_eq!(copy_rule("cudaMemcpyAsync"), Rule::None);
    assert_eq!(copy_rule("cudaMemset"), Rule::SyncMemset);
    assert_eq!(copy_rule("cuMemsetD32Async"), Rule::None);
    assert_eq!(copy_rule("cudaLaunchKernel"), Rule::None);
    assert!(is_kernel_launch("cudaLaunchKernel") && is_kernel_launch("cuLaunchKernelEx"));
    assert!(!is_kernel_launch("cudaGraphLaunch"));
    assert!(is_nccl_kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"));
    assert!(is_nccl_kernel("void ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)"));
    assert!(!is_nccl_kernel("void axpy<float>(float*, float const*, float, int)"));
}

#[test]
fn call_paths_are_a_tree() {
    let mut p = CallPaths::default();
    let (a, b) = (RegionRef::from_id(1), RegionRef::from_id(2));
    let n1 = p.child(0, a);
    let n2 = p.child(n1, b);
    assert_eq!(p.child(0, a), n1);
    assert_ne!(p.child(0, b), n2);
    assert_eq!(p.regions(n2), vec![a, b]);
    assert_eq!(p.regions(0), Vec::<RegionRef>::new());
}
