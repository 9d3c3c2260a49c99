package mat

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// Every part of every product is done once, and done when split returns,
// whether helpers are awake, asleep, or busy with other callers' products.
func TestSplitDoesEveryPartOnce(t *testing.T) {
	for _, procs := range []int{1, 2, 4} {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		var wg sync.WaitGroup
		for caller := range 6 {
			wg.Go(func() {
				for round := range 200 {
					n := 1 + (caller*7+round)%50
					work := []int{0, shareWork, parallelWork}[round%3] * 2
					done := make([]atomic.Int32, n)
					split(n, work, func(from, to int) {
						for p := from; p < to; p++ {
							busy(2000) // a part takes a while, as a product's panel does
							done[p].Add(1)
						}
					})
					for p := range done {
						if got := done[p].Load(); got != 1 {
							t.Errorf("GOMAXPROCS %d, %d parts, work %d: part %d done %d times by the time split returned", procs, n, work, p, got)
							return
						}
					}
				}
			})
		}
		wg.Wait()
	}
}

var sink atomic.Int64

func busy(n int) {
	x := 0
	for i := range n {
		x += i ^ x
	}
	sink.Add(int64(x))
}
