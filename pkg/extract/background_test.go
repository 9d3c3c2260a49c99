package extract_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hectormem/hector/internal/fakellm"
	"github.com/hectormem/hector/pkg/extract"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/llm"
)

// background returns an extractor for f's model that runs in the
// background, with its own thresholds.
func (f *fixture) background(t *testing.T, everyTurns int, idleAfter time.Duration) *extract.Extractor {
	t.Helper()
	client, err := llm.New(llm.Config{BaseURL: f.model.URL, Model: "extractor-1", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	x, err := extract.New(extract.Config{Model: client, Facts: f.facts, Sessions: f.sessions, EveryTurns: everyTurns, IdleAfter: idleAfter})
	if err != nil {
		t.Fatal(err)
	}
	x.Start()
	t.Cleanup(x.Close)
	return x
}

// waitCall waits for the fake model's next request.
func (f *fixture) waitCall(t *testing.T) {
	t.Helper()
	select {
	case <-f.model.Started:
	case <-time.After(10 * time.Second):
		t.Fatal("the model was not asked")
	}
}

// After turns, the worker reads several turns per call, and each call only
// what the last successful run did not read, also after a restart.
func TestBackgroundReadsSeveralTurnsPerCall(t *testing.T) {
	f := newFixture(t, nil, extract.Budget{}, nil,
		answer(fact("add", "home/city", "Lives in Lisbon", "biography", "m1")), answer(), answer())
	x := f.background(t, 2, time.Hour)
	turn := func(x *extract.Extractor, user string) {
		f.say(t, user, "OK")
		x.Notify("app", "alice", "s")
	}
	turn(x, "I live in Lisbon")
	if n := f.model.Count(); n != 0 {
		t.Fatalf("%d calls after one turn, want none before two", n)
	}
	turn(x, "I work as a nurse")
	f.waitCall(t)
	x.Wait()
	if city, err := f.facts.Recall(t.Context(), alice, "home/city"); err != nil || city.Source.Kind != facts.SourceExtracted {
		t.Errorf("the fact of the first two turns: %+v, %v", city, err)
	}
	turn(x, "I like jazz")
	turn(x, "I play the piano")
	f.waitCall(t)
	x.Wait()
	second := fmt.Sprint(f.model.Request(1)["messages"])
	if strings.Contains(second, "I live in Lisbon") || !strings.Contains(second, "jazz") || !strings.Contains(second, "piano") {
		t.Errorf("the second call read: %s", second)
	}
	// A restart goes on from the last run's audit event.
	x.Close()
	restarted := f.background(t, 1, time.Hour)
	turn(restarted, "I have a cat")
	f.waitCall(t)
	restarted.Wait()
	if third := fmt.Sprint(f.model.Request(2)["messages"]); strings.Contains(third, "piano") || !strings.Contains(third, "cat") {
		t.Errorf("after a restart the call read: %s", third)
	}
}

// A session that goes quiet is read without waiting for more turns.
func TestBackgroundReadsAQuietSession(t *testing.T) {
	f := newFixture(t, nil, extract.Budget{}, nil, answer())
	x := f.background(t, 100, 30*time.Millisecond)
	f.say(t, "I live in Lisbon", "OK")
	x.Notify("app", "alice", "s")
	f.waitCall(t)
}

// A turn never waits for extraction: with the model holding its answer,
// more turns are noted at once, and closing cancels the run.
func TestNotifyNeverWaits(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	f := newFixture(t, nil, extract.Budget{}, nil, fakellm.Reply{Wait: hold})
	x := f.background(t, 1, time.Hour)
	f.say(t, "I live in Lisbon", "OK")
	x.Notify("app", "alice", "s")
	f.waitCall(t) // the run is under way, and the model holds it
	done := make(chan struct{})
	go func() {
		for range 100 {
			x.Notify("app", "alice", "s")
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Notify waited for the extraction under way")
	}
	x.Close()
}

// Erasing a user holds extraction off them: the run under way (its model
// holding the answer) is cancelled and has ended when Hold returns, having
// written nothing; a new one is refused until the hold is released.
func TestHoldStopsTheRunsOfAUserBeingErased(t *testing.T) {
	hold := make(chan struct{})
	defer close(hold)
	first := answer(fact("add", "home", "Lives in Lisbon", "places", "m1"))
	first.Wait = hold
	f := newFixture(t, nil, extract.Budget{}, []string{"I live in Lisbon", "OK"}, first, answer(fact("add", "home", "Lives in Lisbon", "places", "m1")))
	x := f.background(t, 100, time.Hour)
	req := extract.Request{AppName: "app", UserID: "alice", SessionID: "s"}
	done := make(chan error, 1)
	go func() {
		_, err := x.Extract(context.Background(), req)
		done <- err
	}()
	f.waitCall(t) // under way, the model holding its answer
	release := x.Hold("app", "alice")
	select {
	case err := <-done:
		if err == nil {
			t.Error("the run under way finished as if nothing happened")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the run under way did not end")
	}
	if fs, err := f.facts.List(t.Context(), facts.UserScope("app", "alice"), "", ""); err != nil || len(fs) != 0 {
		t.Errorf("facts written by a run the erasure stopped: %+v, %v", fs, err)
	}
	if _, err := x.Extract(t.Context(), req); !errors.Is(err, extract.ErrErasing) {
		t.Errorf("extracting during the erasure: %v, want ErrErasing", err)
	}
	release()
	if got, err := x.Extract(t.Context(), req); err != nil || len(got.Facts) != 1 {
		t.Errorf("extracting after the erasure ended: %+v, %v", got, err)
	}
}
