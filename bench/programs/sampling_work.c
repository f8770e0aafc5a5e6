/* Fixed work for bench/sampling.sh: ITERATIONS rounds of a fixed
 * arithmetic loop (no clock read, so that time taken from the program by
 * sampling shows in its run time) in two functions, each round joined by
 * an MPI_Allreduce.
 *
 *   sampling_work [ITERATIONS [INNER]]   (defaults 400, 2000000)
 */
#include <mpi.h>
#include <stdlib.h>

__attribute__((noinline)) static double work_a(long n, double x) {
  for (long i = 0; i < n; i++) x = x * 1.0000001 + 1e-9;
  return x;
}

__attribute__((noinline)) static double work_b(long n, double x) {
  for (long i = 0; i < n; i++) x = x * 0.9999999 + 2e-9;
  return x;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int iterations = argc > 1 ? atoi(argv[1]) : 400;
  long inner = argc > 2 ? atol(argv[2]) : 2000000;
  double x = 1.0, sum = 0.0;
  for (int i = 0; i < iterations; i++) {
    x = work_a(inner, x);
    x = work_b(inner / 2, x);
    MPI_Allreduce(&x, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  MPI_Finalize();
  return sum == 42.0;
}
