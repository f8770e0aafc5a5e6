//! Open MPI programs traced with `libgputrace_mpi.so`: the test programs
//! of `tests/programs/mpi`, compiled with `mpicc`/`mpif90` and run with
//! `mpirun -np 2` and `-np 4`. Skipped, with a note, where Open MPI is not
//! installed; under `CI=true` that fails instead.

#[path = "../../tests/support/mod.rs"]
mod support;

use support::{MPICH, OPENMPI, scenarios};

macro_rules! tests {
    ($($name:ident => $body:expr;)*) => {$(
        #[test]
        fn $name() {
            if OPENMPI.available() {
                $body;
            }
        }
    )*};
}

tests! {
    p2p_on_2_ranks => scenarios::p2p(&OPENMPI, 2);
    p2p_on_4_ranks => scenarios::p2p(&OPENMPI, 4);
    nonblocking_on_2_ranks => scenarios::nonblocking(&OPENMPI, 2);
    nonblocking_on_4_ranks => scenarios::nonblocking(&OPENMPI, 4);
    collectives_on_2_ranks => scenarios::collectives(&OPENMPI, 2);
    collectives_on_4_ranks => scenarios::collectives(&OPENMPI, 4);
    communicators_translate_peers => scenarios::communicators(&OPENMPI, 4);
    threads_record_into_their_own_locations => scenarios::threads(&OPENMPI, 2);
    fortran_mpif_h => scenarios::fortran(&OPENMPI, "fortran.f90", 2);
    fortran_use_mpi => scenarios::fortran(&OPENMPI, "fortran_usempi.f90", 4);
    clocks_are_measured_per_host => scenarios::clock_sync(&OPENMPI);
    groups_and_filter_decide_what_is_recorded => scenarios::groups_and_filter(&OPENMPI);
    abort_finishes_the_trace_first => scenarios::abort(&OPENMPI);
    exit_without_finalize_keeps_the_trace => scenarios::exit3(&OPENMPI);
    killed_rank_leaves_a_salvageable_trace => scenarios::killself(&OPENMPI);
    loads_into_processes_without_mpi => scenarios::harmless_without_mpi(&OPENMPI);
    finds_an_mpi_opened_rtld_local => scenarios::opened_local(&OPENMPI, 2);
    lookups_never_abort => scenarios::lookups_never_abort(&OPENMPI, 16);
    passes_mpich_programs_through => scenarios::wrong_flavour(&OPENMPI, &MPICH);
}
