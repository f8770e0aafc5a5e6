//! `gputrace-nvml`: the process that asks NVML for the CUDA agent's
//! sampler (see `gputrace_cuda::nvml_proxy`), installed next to the
//! agent's library.

fn main() -> std::process::ExitCode {
    gputrace_cuda::nvml_proxy::server_main()
}
