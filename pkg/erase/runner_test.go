package erase

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// An ID no store takes is refused before anything is recorded, so no
// receipt is left running that no start could finish.
func TestRunnerRefusesBadIDsBeforeRecording(t *testing.T) {
	receipts := NewInMemoryReceipts()
	called := false
	r := NewRunner(receipts, func(context.Context, string, string, string, *Receipt) (*Receipt, error) {
		called = true
		return &Receipt{}, nil
	}, quiet)
	for _, user := range []string{"a\nb", "a\tb", "a\rb", "a\x7fb", "a\x1bb", "", strings.Repeat("u", 129), "\xff"} {
		if _, _, err := r.Erase(t.Context(), "app", user, "admin", time.Second); err == nil {
			t.Errorf("erasing %q: no error", user)
		}
	}
	if _, _, err := r.Erase(t.Context(), "a\x00", "u", "admin", time.Second); err == nil {
		t.Error("an app name with a NUL: no error")
	}
	if running, _ := receipts.Running(t.Context()); called || len(running) != 0 {
		t.Errorf("a refused erasure ran (%v) or recorded %d receipts", called, len(running))
	}
}

// An erasure that outlasts the wait answers its progress (done false) and
// goes on; meanwhile the user is held and others are not; asking again
// joins the same erasure.
func TestRunnerAnswersBeforeALongErasureEnds(t *testing.T) {
	receipts := NewInMemoryReceipts()
	release := make(chan struct{})
	var runs atomic.Int32
	r := NewRunner(receipts, func(_ context.Context, app, user, by string, _ *Receipt) (*Receipt, error) {
		runs.Add(1)
		rec := &Receipt{AppName: app, UserID: user, By: by, State: StateRunning}
		receipts.Put(context.Background(), rec)
		<-release
		rec.State, rec.Verified = StateDone, true
		return rec, receipts.Put(context.Background(), rec)
	}, quiet)
	rec, done, err := r.Erase(t.Context(), "app", "alice", "admin", time.Millisecond)
	if err != nil || done || rec.State != StateRunning {
		t.Fatalf("a long erasure answered %+v, done %v, %v", rec, done, err)
	}
	if err := r.Held(t.Context(), "app", "alice"); !errors.Is(err, ErrInProgress) {
		t.Errorf("a write to alice during her erasure: %v", err)
	}
	if err := r.Held(t.Context(), "app", "bob"); err != nil {
		t.Errorf("a write to bob during alice's erasure: %v", err)
	}
	close(release)
	rec, done, err = r.Erase(t.Context(), "app", "alice", "admin", time.Minute)
	if err != nil || !done || rec.State != StateDone {
		t.Fatalf("asking again: %+v, done %v, %v", rec, done, err)
	}
	r.Wait()
	if err := r.Held(t.Context(), "app", "alice"); err != nil {
		t.Errorf("a write to alice after her erasure: %v", err)
	}
}

// Another replica's running erasure holds the user here too: the receipt
// is what replicas share.
func TestRunnerHoldsWhatAnotherReplicaErases(t *testing.T) {
	receipts := NewInMemoryReceipts()
	receipts.Put(t.Context(), &Receipt{AppName: "app", UserID: "alice", State: StateRunning})
	r := NewRunner(receipts, nil, quiet)
	if err := r.Held(t.Context(), "app", "alice"); !errors.Is(err, ErrInProgress) {
		t.Errorf("held = %v", err)
	}
}

// A resume that fails is retried in the background and reported by
// Failing until it succeeds; it never returns the failure to the start.
func TestRunnerRetriesAFailedResume(t *testing.T) {
	receipts := NewInMemoryReceipts()
	receipts.Put(t.Context(), &Receipt{AppName: "app", UserID: "alice", State: StateRunning})
	fail := make(chan bool)
	r := NewRunner(receipts, func(_ context.Context, app, user, by string, from *Receipt) (*Receipt, error) {
		if from == nil {
			return nil, errors.New("not a resume")
		}
		if <-fail {
			return nil, errors.New("the index store does not answer")
		}
		from.State = StateDone
		return from, receipts.Put(context.Background(), from)
	}, quiet)
	r.retry = time.Millisecond
	if err := r.Resume(t.Context()); err != nil {
		t.Fatal(err)
	}
	fail <- true
	fail <- true // the first attempt's failure is recorded before the second begins
	if err := r.Failing(); err == nil || !strings.Contains(err.Error(), "the index store does not answer") {
		t.Errorf("failing after a failed resume = %v", err)
	}
	fail <- false
	r.Wait()
	for r.Failing() != nil { // cleared right after the run that succeeded
		time.Sleep(time.Millisecond)
	}
	if latest, _ := receipts.Latest(t.Context(), "app", "alice"); latest.State != StateDone {
		t.Errorf("the receipt after the retry = %+v", latest)
	}
}

// countingReceipts counts the reads of a user's latest receipt.
type countingReceipts struct {
	Receipts
	latest atomic.Int32
}

func (c *countingReceipts) Latest(ctx context.Context, app, user string) (*Receipt, error) {
	c.latest.Add(1)
	return c.Receipts.Latest(ctx, app, user)
}

// With a watch on the receipts, a write asks memory, not the database:
// another replica's erasure holds the user within a look or two, and a
// user nobody erases costs no read.
func TestAWatchHoldsWithoutAReadPerWrite(t *testing.T) {
	receipts := &countingReceipts{Receipts: NewInMemoryReceipts()}
	r := NewRunner(receipts, nil, quiet)
	go r.Watch(t.Context())
	receipts.Put(t.Context(), &Receipt{AppName: "app", UserID: "alice", State: StateRunning})
	seen := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.seen[[2]string{"app", "alice"}]
	}
	for deadline := time.Now().Add(Settle); !seen(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the watch has not seen alice's erasure %s after it was recorded", Settle)
		}
	}
	if err := r.Held(t.Context(), "app", "alice"); !errors.Is(err, ErrInProgress) {
		t.Errorf("alice, seen by the watch: %v", err)
	}
	reads := receipts.latest.Load()
	for range 100 {
		if err := r.Held(t.Context(), "app", "bob"); err != nil {
			t.Fatal(err)
		}
	}
	if n := receipts.latest.Load() - reads; n > 2 { // a look may go stale under a slow machine; not 100 times
		t.Errorf("100 writes to bob read the receipts %d times", n)
	}
}

// An erasure that ends here lets the user's writes go at once, whatever
// the last look at the receipts saw.
func TestAnErasureEndedHereLetsWritesGoAtOnce(t *testing.T) {
	receipts := NewInMemoryReceipts()
	release := make(chan struct{})
	r := NewRunner(receipts, func(_ context.Context, app, user, by string, _ *Receipt) (*Receipt, error) {
		rec := &Receipt{AppName: app, UserID: user, State: StateRunning}
		receipts.Put(context.Background(), rec)
		<-release
		rec.State = StateDone
		return rec, receipts.Put(context.Background(), rec)
	}, quiet)
	go r.Watch(t.Context())
	if _, done, _ := r.Erase(t.Context(), "app", "alice", "admin", time.Millisecond); done {
		t.Fatal("the erasure ended before it was released")
	}
	time.Sleep(2 * WatchEvery) // the watch sees it running
	close(release)
	r.Wait()
	for range 20 { // across the next looks too
		if err := r.Held(t.Context(), "app", "alice"); err != nil {
			t.Fatalf("a write right after her erasure ended here: %v", err)
		}
		time.Sleep(WatchEvery / 10)
	}
}

// An erasure that could not verify (writes it could not get ahead of)
// answers running, is named by Failing, and is resumed in the background
// until it verifies: never recorded done unverified.
func TestRunnerResumesAnErasureThatCouldNotVerify(t *testing.T) {
	receipts := NewInMemoryReceipts()
	var runs atomic.Int32
	r := NewRunner(receipts, func(_ context.Context, app, user, by string, from *Receipt) (*Receipt, error) {
		rec := &Receipt{AppName: app, UserID: user, By: by, State: StateRunning}
		if runs.Add(1) < 3 {
			receipts.Put(context.Background(), rec)
			return rec, ErrNotVerified
		}
		rec.State, rec.Verified = StateDone, true
		return rec, receipts.Put(context.Background(), rec)
	}, quiet)
	r.retry = time.Millisecond
	watching, stop := context.WithCancel(t.Context())
	defer stop()
	go r.Watch(watching)
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) { // Watch has begun
		r.mu.Lock()
		life := r.life
		r.mu.Unlock()
		if life != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Watch did not begin")
		}
	}
	rec, done, err := r.Erase(t.Context(), "app", "alice", "admin", time.Minute)
	if err != nil || done || rec.State != StateRunning {
		t.Fatalf("an erasure that could not verify answered %+v, done %v, %v; want it running", rec, done, err)
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
		latest, err := receipts.Latest(t.Context(), "app", "alice")
		if err != nil {
			t.Fatal(err)
		}
		if latest.State == StateDone {
			if !latest.Verified || runs.Load() != 3 {
				t.Errorf("done after %d runs: %+v", runs.Load(), latest)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not resumed to the end: %d runs, %+v", runs.Load(), latest)
		}
	}
	for deadline := time.Now().Add(time.Minute); r.Failing() != nil; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("Failing once verified: %v", r.Failing())
		}
	}
}
