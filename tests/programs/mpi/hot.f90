! Sampling and unwinding (tests/integration/sampling.rs, unwinding.rs):
! known hot subroutines in Fortran, built -O2 -fomit-frame-pointer -g.
! hot_a (a module procedure: gfortran names it __hot_mod_MOD_hot_a)
! spins 0.6 s of CPU time, hot_b (an external subroutine: hot_b_) 0.3 s,
! the main program (MAIN__) 0.1 s, each through spin
! (__hot_mod_MOD_spin); hot_a and hot_b each call MPI_Barrier from their
! own frame. An argument scales the three (2: twice as long).
module hot_mod
  implicit none
  real(8), volatile :: sink
contains
  subroutine spin(seconds)
    real(8), intent(in) :: seconds
    real(8) :: t0, t, x
    integer :: i
    call cpu_time(t0)
    x = 1.0d0
    do
      do i = 1, 1000
        x = x * 1.000001d0 + 1.0d-9
      end do
      call cpu_time(t)
      if (t - t0 >= seconds) exit
    end do
    sink = x
  end subroutine spin

  subroutine hot_a(rounds, scale)
    include 'mpif.h'
    integer, intent(in) :: rounds
    real(8), intent(in) :: scale
    integer :: r, ierr
    do r = 1, rounds
      call spin(0.6d0 * scale / rounds)
      call MPI_Barrier(MPI_COMM_WORLD, ierr)
    end do
  end subroutine hot_a
end module hot_mod

subroutine hot_b(rounds, scale)
  use hot_mod, only: spin
  implicit none
  include 'mpif.h'
  integer, intent(in) :: rounds
  real(8), intent(in) :: scale
  integer :: r, ierr
  do r = 1, rounds
    call spin(0.3d0 * scale / rounds)
    call MPI_Barrier(MPI_COMM_WORLD, ierr)
  end do
end subroutine hot_b

program hot
  use hot_mod
  implicit none
  include 'mpif.h'
  integer :: ierr
  real(8) :: scale
  character(len=32) :: arg
  call MPI_Init(ierr)
  scale = 1.0d0
  if (command_argument_count() > 0) then
    call get_command_argument(1, arg)
    read (arg, *) scale
  end if
  call hot_a(20, scale)
  call hot_b(20, scale)
  call spin(0.1d0 * scale)
  call MPI_Finalize(ierr)
end program hot
