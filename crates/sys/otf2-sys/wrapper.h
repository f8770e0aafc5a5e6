/* Input of generate.sh: every public OTF2 header that has no static
 * functions. otf2.h pulls in the writer and reader APIs; the Pthread and
 * OpenMP locking headers and OTF2_MPI_Collectives.h define static functions
 * (and need pthread.h / mpi.h), so they are not bound here: src/locks.rs
 * provides the Pthread locking callbacks in Rust instead. */
#include <otf2/otf2.h>
