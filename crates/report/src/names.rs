//! Kernel names for the terminal. A demangled C++ kernel name can run to
//! thousands of characters (PyTorch's `elementwise_kernel` instances carry
//! their functors and lambdas as template arguments, cutlass's carry whole
//! GEMM configurations): terminal tables show its *base name* — the
//! qualified function name without return type, template arguments and
//! parameters, as `nsys stats --base` shows kernels — cut with `…` when
//! still too wide. CSV, JSON and the archive keep the full name.

use std::borrow::Cow;

/// The base name of a demangled function name:
/// `void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, …>(int, …)`
/// → `at::native::vectorized_elementwise_kernel`. Qualifiers stay
/// (`(anonymous namespace)` included); a name that is not C++
/// (`ampere_sgemm_128x64_tn`, a mangled name that did not demangle) or
/// that cannot be parsed (brackets that do not balance) is returned as it
/// is.
pub fn base_name(name: &str) -> Cow<'_, str> {
    if !name.contains(['<', '(', ' ']) {
        return Cow::Borrowed(name);
    }
    elide(name).map_or(Cow::Borrowed(name), Cow::Owned)
}

/// `name` for a terminal column of `width` characters: its base name, cut
/// to `width` with a final `…` when longer.
pub fn for_terminal(name: &str, width: usize) -> String {
    cut(&base_name(name), width)
}

/// `s` cut to `width` characters (at least 1), the last one `…`, when
/// longer.
pub fn cut(s: &str, width: usize) -> String {
    let width = width.max(1);
    if s.chars().count() <= width {
        return s.to_string();
    }
    let mut out: String = s.chars().take(width - 1).collect();
    out.push('…');
    out
}

fn ends_with_operator(s: &str) -> bool {
    s.strip_suffix("operator").is_some_and(|before| !before.ends_with(|c: char| c.is_alphanumeric() || c == '_'))
}

/// The three steps: template arguments out, then the parameter list, then
/// the return type. `None` when the brackets do not balance.
fn elide(name: &str) -> Option<String> {
    let flat = without_templates(name)?;
    let function = without_parameters(&flat)?;
    let base = without_return_type(function).trim();
    (!base.is_empty()).then(|| base.to_string())
}

/// Everything between matching `<` `>` removed. (A kernel is never an
/// operator — `__global__` functions are free functions — so an `operator<`
/// can only appear inside the arguments that go.)
fn without_templates(name: &str) -> Option<String> {
    let mut out = String::with_capacity(name.len().min(256));
    let mut depth = 0usize;
    for c in name.chars() {
        match c {
            '<' => depth += 1,
            '>' if depth > 0 => depth -= 1,
            '>' => return None,
            _ if depth == 0 => out.push(c),
            _ => {}
        }
    }
    (depth == 0).then_some(out)
}

/// The name up to its parameter list: the first `(` at the top level that
/// is not part of the qualified name (`(anonymous namespace)::`, an
/// enclosing function of a lambda `f(int)::{lambda()#1}`, `operator()`).
fn without_parameters(flat: &str) -> Option<&str> {
    let bytes = flat.as_bytes();
    let mut i = 0;
    let mut braces = 0usize;
    while i < bytes.len() {
        match bytes[i] {
            b'{' => braces += 1,
            b'}' => braces = braces.checked_sub(1)?,
            b'(' if braces == 0 => {
                let close = matching_paren(bytes, i)?;
                let qualifier = flat[close + 1..].starts_with("::");
                if !qualifier && !ends_with_operator(&flat[..i]) {
                    return Some(&flat[..i]);
                }
                i = close;
            }
            b')' if braces == 0 => return None,
            _ => {}
        }
        i += 1;
    }
    (braces == 0).then_some(flat)
}

/// The index of the `)` that closes the `(` at `open`.
fn matching_paren(bytes: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (j, &b) in bytes.iter().enumerate().skip(open) {
        match b {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// The part after the last space outside brackets (`void f` → `f`,
/// `void (anonymous namespace)::f` → `(anonymous namespace)::f`).
fn without_return_type(function: &str) -> &str {
    let mut depth = 0usize;
    let mut start = 0;
    for (i, c) in function.char_indices() {
        match c {
            '(' | '{' => depth += 1,
            ')' | '}' => depth = depth.saturating_sub(1),
            ' ' if depth == 0 => start = i + 1,
            _ => {}
        }
    }
    &function[start..]
}

/// A sampled calling context's source line as the reports show it,
/// `hot.c:21` (the file's base name), where the archive has it.
pub(crate) fn source_line(defs: &otf2::reader::GlobalDefs, c: &otf2::reader::CallingContextDef) -> Option<String> {
    let &(file, line) = defs.source_code_locations.get(&c.location?)?;
    let file = defs.string(file);
    Some(format!("{}:{line}", file.rsplit('/').next().unwrap_or(file)))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Names as CUPTI reports them once demangled (cpp_demangle's spelling),
    // for kernels PyTorch, cuBLAS and cutlass launch.
    const FILL: &str = "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, \
                        at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)";
    const COPY: &str = "void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<\
                        at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() \
                        const::{lambda()#7}::operator()() const::{lambda(float)#1}>(at::TensorIteratorBase&, \
                        at::native::direct_copy_kernel_cuda(at::TensorIteratorBase&)::{lambda()#3}::operator()() \
                        const::{lambda()#7}::operator()() const::{lambda(float)#1} const&)::{lambda(int)#1}>(int, \
                        at::native::gpu_kernel_impl_nocast<at::native::direct_copy_kernel_cuda(\
                        at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() \
                        const::{lambda(float)#1}>(at::TensorIteratorBase&, at::native::direct_copy_kernel_cuda(\
                        at::TensorIteratorBase&)::{lambda()#3}::operator()() const::{lambda()#7}::operator()() \
                        const::{lambda(float)#1} const&)::{lambda(int)#1})";
    const REDUCE: &str = "void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, \
                          at::native::func_wrapper_t<float, at::native::sum_functor<float, float, float>::operator()(\
                          at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, float, 4> >(\
                          at::native::ReduceOp<float, at::native::func_wrapper_t<float, at::native::sum_functor<float, \
                          float, float>::operator()(at::TensorIterator&)::{lambda(float, float)#1}>, unsigned int, \
                          float, 4>)";
    const INDEX: &str = "void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long, unsigned int, 2, \
                         2, -2, true>(at::cuda::detail::TensorInfo<float, unsigned int>, at::cuda::detail::TensorInfo<\
                         float const, unsigned int>, at::cuda::detail::TensorInfo<long const, unsigned int>, int, \
                         int, unsigned int, unsigned int, long)";
    const GEMV: &str = "void gemv2T_kernel_val<int, int, float, float, float, float, 128, 16, 4, 4, false, false, \
                        cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, \
                        cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float> >(\
                        cublasGemvParamsEx<int, cublasGemvTensorStridedBatched<float const>, \
                        cublasGemvTensorStridedBatched<float const>, cublasGemvTensorStridedBatched<float>, float>, \
                        float, float)";
    const CUTLASS2: &str = "void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_16x5_tn_align4>(\
                            cutlass_80_tensorop_s1688gemm_128x128_16x5_tn_align4::Params)";
    const CUTLASS3: &str = "void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, \
                            int, int>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::\
                            MainloopSm90TmaGmmaWarpSpecialized<4, cute::tuple<cute::C<1>, cute::C<1>, cute::C<1> >, \
                            cutlass::gemm::KernelTmaWarpSpecializedCooperative>, cute::tuple<cute::C<128>, \
                            cute::C<128>, cute::C<64> >, cutlass::bfloat16_t, cute::tuple<long, cute::C<1>, long>, \
                            cutlass::bfloat16_t, cute::tuple<long, cute::C<1>, long> >, void, void> >(\
                            cutlass::gemm::kernel::GemmUniversal<cute::tuple<int, int, int, int>, void, void>::Params)";
    const SGEMM: &str = "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_\
                         segment_k_off_kernel__5x_cublas";

    #[test]
    fn pytorch_kernels_keep_their_qualified_function_name() {
        assert!(COPY.len() > 800, "{}", COPY.len());
        assert_eq!(base_name(FILL), "at::native::vectorized_elementwise_kernel");
        assert_eq!(base_name(COPY), "at::native::elementwise_kernel");
        assert_eq!(base_name(REDUCE), "at::native::reduce_kernel");
        assert_eq!(base_name(INDEX), "at::native::(anonymous namespace)::indexSelectLargeIndex");
    }

    #[test]
    fn cublas_and_cutlass_kernels_lose_their_configurations() {
        assert_eq!(base_name(GEMV), "gemv2T_kernel_val");
        assert_eq!(base_name(CUTLASS2), "cutlass::Kernel2");
        assert_eq!(base_name(CUTLASS3), "cutlass::device_kernel");
        // A C name is its own base name; a long one is cut.
        assert_eq!(base_name(SGEMM), SGEMM);
        let shown = for_terminal(SGEMM, 60);
        assert_eq!(shown.chars().count(), 60);
        assert!(shown.ends_with('…') && SGEMM.starts_with(shown.trim_end_matches('…')), "{shown}");
    }

    #[test]
    fn plain_and_odd_names() {
        assert_eq!(base_name("scale(float*, float, int)"), "scale");
        assert_eq!(base_name("void axpy<float>(int, float, float const*, float*)"), "axpy");
        assert_eq!(base_name("ampere_sgemm_128x64_tn"), "ampere_sgemm_128x64_tn");
        assert_eq!(base_name("unsigned int ns::f<2>(int)"), "ns::f");
        assert_eq!(base_name("void ns::Functor::operator()(int) const"), "ns::Functor::operator()");
        // Not parseable, or not C++: as given.
        assert_eq!(base_name("void broken<int(int"), "void broken<int(int");
        assert_eq!(base_name("void broken>(int)"), "void broken>(int)");
        assert_eq!(base_name("_Z6kernelPfS_i"), "_Z6kernelPfS_i");
        assert_eq!(base_name(""), "");
    }

    #[test]
    fn short_names_are_not_touched_and_cuts_count_characters() {
        assert_eq!(for_terminal("cudaLaunchKernel", 8), "cudaLau…");
        assert_eq!(for_terminal("MPI_Send", 8), "MPI_Send");
        assert_eq!(cut("äöü", 2), "ä…");
        assert_eq!(cut("abc", 0), "…");
        assert!(matches!(base_name("MPI_Send"), Cow::Borrowed("MPI_Send")));
    }
}
