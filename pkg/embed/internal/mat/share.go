package mat

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// split runs do over parts 0 to n (a product's panels), sharing them with
// helpers on the other cores when work (a count of multiply-adds) is worth
// it. The caller and each helper take one part at a time until none is
// left, so a helper that comes late takes less, or nothing, and the caller
// never waits for a helper to wake: it waits only for the parts helpers
// hold. A helper keeps looking for work for a moment after its last
// (helperSpin): an encoder hands out a product every few tens of
// microseconds, about what waking a sleeping thread costs, which is why
// handing each product to new goroutines made two cores no faster than
// one on a 16-piece query.
func split(n, work int, do func(from, to int)) {
	hs := freeHelpers(min(runtime.GOMAXPROCS(0), n, max(1, work/shareWork)) - 1)
	if len(hs) == 0 {
		do(0, n)
		return
	}
	j := &job{do: do, n: int64(n)}
	for _, h := range hs {
		h.post(j, work >= parallelWork)
	}
	j.run()
	// A helper that has not taken the job by now never will.
	taken := int64(0)
	for _, h := range hs {
		if h.slot.CompareAndSwap(j, nil) {
			h.busy.Store(false)
		} else {
			taken++
		}
	}
	for j.visitors.Load() < taken {
		runtime.Gosched()
	}
}

// shareWork is the work from which a product is shared with a helper that
// is awake; parallelWork, from which one is woken.
const shareWork = 1 << 19

// helperSpin is how long a helper looks for work before it sleeps.
const helperSpin = 200 * time.Microsecond

type job struct {
	do       func(from, to int)
	n        int64
	next     atomic.Int64 // the next part to take
	visitors atomic.Int64 // helpers that took the job and are done with it
}

// run takes parts until none is left.
func (j *job) run() {
	for {
		p := j.next.Add(1) - 1
		if p >= j.n {
			return
		}
		j.do(int(p), int(p)+1)
	}
}

// help is run by a helper, which then says it is done with the job.
func (j *job) help() {
	j.run()
	j.visitors.Add(1)
}

type helper struct {
	busy     atomic.Bool // claimed by a caller whose job it has not taken yet
	slot     atomic.Pointer[job]
	sleeping atomic.Bool
	wake     chan struct{}
}

var (
	helpersOnce sync.Once
	helpers     []*helper
)

// freeHelpers claims up to n helpers that have no job.
func freeHelpers(n int) []*helper {
	if n <= 0 {
		return nil
	}
	helpersOnce.Do(func() {
		for range runtime.NumCPU() - 1 {
			h := &helper{wake: make(chan struct{}, 1)}
			helpers = append(helpers, h)
			go h.loop()
		}
	})
	var free []*helper
	for _, h := range helpers {
		if len(free) == n {
			break
		}
		if h.busy.CompareAndSwap(false, true) {
			free = append(free, h)
		}
	}
	return free
}

// post gives the helper j, waking it if it sleeps and wake says the job
// is worth it; else the caller may do every part itself.
func (h *helper) post(j *job, wake bool) {
	h.slot.Store(j)
	if wake && h.sleeping.Load() {
		select {
		case h.wake <- struct{}{}:
		default:
		}
	}
}

func (h *helper) loop() {
	for {
		j := h.await()
		h.busy.Store(false) // another caller may post now: its job is taken once this one is done
		j.help()
	}
}

// await spins for helperSpin, then sleeps until woken, until a job comes.
func (h *helper) await() *job {
	for {
		deadline := time.Now().Add(helperSpin)
		for i := 0; ; i++ {
			if j := h.slot.Swap(nil); j != nil {
				return j
			}
			if i%64 == 63 && time.Now().After(deadline) {
				break
			}
			runtime.Gosched()
		}
		h.sleeping.Store(true)
		if j := h.slot.Swap(nil); j != nil { // posted before it saw sleeping
			h.sleeping.Store(false)
			return j
		}
		<-h.wake
		h.sleeping.Store(false)
	}
}

// Share runs do over parts 0 to n (a layer's attention heads) with a
// helper on another core if one is awake and free, waking none: for work
// that costs more than its multiply-adds count (attention's copies,
// packing and softmax around products too small for split to share), too
// little to wake a core for, enough to share with one that is looking for
// work, as one is right after a product.
func Share(n int, do func(from, to int)) { split(n, 2*shareWork, do) }
