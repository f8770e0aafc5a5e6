! Fortran with include 'mpif.h' and MPI_Init: see fortran_body.inc.
! Usage: fortran (no arguments; 3 iterations)
program fortran_mpif
  implicit none
  include 'mpif.h'
  character(len=*), parameter :: program_name = 'fortran'
  include 'fortran_body.inc'
contains
  subroutine start_mpi(provided, ierr)
    integer, intent(out) :: provided, ierr
    provided = 0
    call MPI_Init(ierr)
  end subroutine
end program
