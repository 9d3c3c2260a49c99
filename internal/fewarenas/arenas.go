package fewarenas

/*
#cgo LDFLAGS: -lpthread
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

static pthread_barrier_t hector_start;

static void *hector_allocate(void *arg) {
	pthread_barrier_wait(&hector_start);
	for (int i = 0; i < 20000; i++) {
		void *p = malloc(4096 + (i % 7) * 512);
		memset(p, 1, 64);
		free(p);
	}
	return NULL;
}

// hector_arenas has threads allocate at once, then counts the arenas
// malloc made (its malloc_info report has a heap element for each); -1
// where that cannot be told.
static int hector_arenas(int threads) {
#if defined(__GLIBC__)
	pthread_t t[64];
	if (threads > 64) threads = 64;
	pthread_barrier_init(&hector_start, NULL, threads);
	for (int i = 0; i < threads; i++) pthread_create(&t[i], NULL, hector_allocate, NULL);
	for (int i = 0; i < threads; i++) pthread_join(t[i], NULL);
	pthread_barrier_destroy(&hector_start);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (f == NULL) return -1;
	malloc_info(0, f);
	fclose(f);
	int n = 0;
	for (char *p = buf; (p = strstr(p, "<heap nr=")) != NULL; p++) n++;
	free(buf);
	return n;
#else
	return -1;
#endif
}
*/
import "C"

// arenas has threads allocate at once and returns how many arenas malloc
// keeps, or -1 where that cannot be told (a C library other than glibc).
func arenas(threads int) int { return int(C.hector_arenas(C.int(threads))) }
