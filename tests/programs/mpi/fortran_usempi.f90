! Fortran with use mpi and MPI_Init_thread: see fortran_body.inc.
! Usage: fortran_usempi (no arguments; 3 iterations)
program fortran_usempi
  use mpi
  implicit none
  character(len=*), parameter :: program_name = 'fortran_usempi'
  include 'fortran_body.inc'
contains
  subroutine start_mpi(provided, ierr)
    integer, intent(out) :: provided, ierr
    call MPI_Init_thread(MPI_THREAD_FUNNELED, provided, ierr)
  end subroutine
end program
