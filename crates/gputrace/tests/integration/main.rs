//! End-to-end tests of `gputrace`: real programs, real launchers, archives
//! read by independent readers.

mod analysis;
mod analyze;
mod bad_input;
mod capture;
mod cli;
mod cuda;
mod cut_archive;
mod flight;
mod full_disk;
mod graphs;
mod hang;
mod layout;
mod links;
mod lost;
mod memory;
mod mpi;
mod mpi4py;
mod nccl;
mod nvtx;
mod parallel_merge;
mod profile;
mod program_fds;
mod report_window;
mod sampling;
mod sampling_python;
mod sampling_torchrun;
mod scale;
mod sizes;
mod slurm;
mod sources;
mod stops;
mod unwinding;
mod util;
