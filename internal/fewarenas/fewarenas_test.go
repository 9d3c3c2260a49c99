package fewarenas

import (
	"os"
	"testing"
)

func TestThreadsAllocatingAtOnceShareTwoArenas(t *testing.T) {
	if os.Getenv("MALLOC_ARENA_MAX") != "" {
		t.Skip("MALLOC_ARENA_MAX is set: the environment decides")
	}
	n := arenas(16)
	if n < 0 {
		t.Skip("not glibc: its malloc keeps no arenas per thread")
	}
	if n > 2 {
		t.Fatalf("16 threads allocating at once made %d arenas, want at most 2", n)
	}
	t.Logf("%d arenas", n)
}
