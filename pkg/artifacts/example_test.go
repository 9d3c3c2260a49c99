package artifacts_test

import (
	"context"
	"fmt"

	"github.com/hectormem/hector/pkg/artifacts"
)

// A session's artifacts through a handle: each save is a new version.
func ExampleNewHandle() {
	h := artifacts.NewHandle(context.Background(), artifacts.NewInMemoryService(), "app", "alice", "trip")
	for _, plan := range []string{"Day 1: Alfama", "Day 1: Alfama\nDay 2: Belém"} {
		if _, err := h.Save(&artifacts.Artifact{Name: "plan.txt", MimeType: "text/plain", Data: []byte(plan)}); err != nil {
			panic(err)
		}
	}
	a, err := h.Get("plan.txt")
	if err != nil {
		panic(err)
	}
	fmt.Printf("v%d, %d bytes\n", a.Version, a.Size)
	fmt.Println(h.Delta())
	// Output:
	// v2, 27 bytes
	// map[plan.txt:2]
}
