//! `libgputrace_mpi.so`: gputrace's PMPI wrappers for Open MPI.
//!
//! Preloaded into the ranks (`mpirun -x LD_PRELOAD=.../libgputrace_mpi.so`),
//! it exports every `MPI_*` function of the signature list in
//! `gputrace-mpi-core`, expanded for [`OpenMpi`]'s ABI, plus Fortran wrappers
//! ([`fortran`]): Open MPI's Fortran bindings call `PMPI_*` directly, so
//! the C wrappers never see a Fortran program's calls.
//!
//! The library is not linked against libmpi; it loads harmlessly into
//! processes without MPI, and in a process whose MPI is not Open MPI it
//! warns once at `MPI_Init` and passes every call through.
//!
//! Depends on `gputrace-mpi-core` (and through it the runtime) and on
//! `raw` and `config`, which its expansion of the signature list names;
//! never on OTF2, the merge or the reports.

#![deny(unsafe_op_in_unsafe_fn)]

pub mod abi;
pub mod fortran;

pub use abi::OpenMpi;

gputrace_mpi_core::define_wrappers!(crate::OpenMpi);

#[cfg(test)]
mod tests {
    #[test]
    fn every_listed_function_is_exported_once() {
        let all = crate::mpi_wrappers::ALL;
        assert_eq!(all.len(), gputrace_mpi_core::functions::WRAPPED);
        let mut names: Vec<&str> = all.iter().map(|f| f.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), all.len(), "a function is listed twice");
        assert!(names.iter().all(|n| n.starts_with("MPI_")));
    }
}
