// Package fewarenas keeps the C heap of a process that uses SQLite from
// growing without end. glibc's malloc gives each thread that allocates at
// once an arena of its own, up to eight per core, and a page freed in one
// arena is not reused by another: SQLite's page caches, allocated and
// freed by whichever of Go's threads ran the call, spread over them all,
// and under a steady load the process's C memory kept rising (from 8 to
// 113 MiB in ten minutes of bench/soak, over nine arenas). Two arenas keep
// it near what the caches hold. Importing the package is all it takes: a C
// constructor sets the limit before Go starts any thread. MALLOC_ARENA_MAX
// in the environment, if set, is left to decide.
package fewarenas

/*
#include <stdlib.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

__attribute__((constructor, used)) static void hector_few_arenas(void) {
#if defined(__GLIBC__) && defined(M_ARENA_MAX)
	if (getenv("MALLOC_ARENA_MAX") == NULL) {
		mallopt(M_ARENA_MAX, 2);
	}
#endif
}
*/
import "C"
