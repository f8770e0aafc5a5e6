//! MPICH programs traced with `libgputrace_mpi_mpich.so`: the test
//! programs of `tests/programs/mpi`, compiled with `mpicc.mpich` /
//! `mpif90.mpich` and run with `mpiexec.mpich`. Skipped, with a note,
//! where MPICH is not installed; under `CI=true` that fails instead.

#[path = "../../tests/support/mod.rs"]
mod support;

use support::{MPICH, OPENMPI, scenarios};

macro_rules! tests {
    ($($name:ident => $body:expr;)*) => {$(
        #[test]
        fn $name() {
            if MPICH.available() {
                $body;
            }
        }
    )*};
}

tests! {
    p2p_on_2_ranks => scenarios::p2p(&MPICH, 2);
    p2p_on_4_ranks => scenarios::p2p(&MPICH, 4);
    nonblocking_on_4_ranks => scenarios::nonblocking(&MPICH, 4);
    collectives_on_4_ranks => scenarios::collectives(&MPICH, 4);
    communicators_translate_peers => scenarios::communicators(&MPICH, 4);
    threads_record_into_their_own_locations => scenarios::threads(&MPICH, 2);
    fortran_goes_through_the_c_wrappers => scenarios::fortran(&MPICH, "fortran.f90", 2);
    clocks_are_measured_per_host => scenarios::clock_sync(&MPICH);
    abort_finishes_the_trace_first => scenarios::abort(&MPICH);
    exit_without_finalize_keeps_the_trace => scenarios::exit3(&MPICH);
    loads_into_processes_without_mpi => scenarios::harmless_without_mpi(&MPICH);
    finds_an_mpi_opened_rtld_local => scenarios::opened_local(&MPICH, 2);
    lookups_never_abort => scenarios::lookups_never_abort(&MPICH, 15);
    passes_open_mpi_programs_through => scenarios::wrong_flavour(&MPICH, &OPENMPI);
}
