package sessiontest

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hectormem/hector/pkg/session"
)

func textEvent(text string, delta map[string]any) *session.Event {
	return &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, text), Actions: session.Actions{StateDelta: delta}}
}

// AppendEvents stores a batch in order with consecutive sequence numbers
// and applies its state deltas in order, or, when any event of it cannot
// be stored, stores none of it and changes neither the handle nor the
// events.
func testAppendBatch(t *testing.T, svc session.Service) {
	s := create(t, svc, "s1", nil)
	appendText(t, svc, s, "before", nil)
	cursor := s.Events().At(0).Cursor
	batch := []*session.Event{
		textEvent("one", map[string]any{"user:lang": "fr", "n": 1}),
		{Author: "model", Partial: true, Message: session.NewTextMessage(session.RoleAssistant, "a streamed chunk")},
		textEvent("two", map[string]any{"user:lang": "pt", "temp:x": 1}),
		textEvent("three", map[string]any{"n": nil}),
	}
	if err := svc.AppendEvents(t.Context(), s, batch); err != nil {
		t.Fatal(err)
	}
	for i, want := range map[int]int64{0: 2, 2: 3, 3: 4} {
		if ev := batch[i]; ev.Seq != want || ev.Cursor <= cursor || ev.ID == "" {
			t.Errorf("event %d: seq %d, cursor %d (before: %d), ID %q; want seq %d", i, ev.Seq, ev.Cursor, cursor, ev.ID, want)
		}
	}
	if !(batch[0].Cursor < batch[2].Cursor && batch[2].Cursor < batch[3].Cursor) {
		t.Errorf("cursors %d, %d, %d are not in the batch's order", batch[0].Cursor, batch[2].Cursor, batch[3].Cursor)
	}
	if batch[1].Seq != 0 {
		t.Errorf("the partial event was given seq %d", batch[1].Seq)
	}
	for what, got := range map[string]session.Session{"handle": s, "stored": get(t, svc, app, user, "s1")} {
		if txt := texts(got); !slices.Equal(txt, []string{"before", "one", "two", "three"}) {
			t.Errorf("%s events %q", what, txt)
		}
	}
	// Later deltas win; temp: keys live in the handle only.
	wantState(t, "handle", stateOf(s), map[string]any{"temp:x": 1, "user:lang": "pt"})
	wantState(t, "stored", stateOf(get(t, svc, app, user, "s1")), map[string]any{"user:lang": "pt"})
	changes, err := svc.Changes(t.Context(), &session.ChangesRequest{After: cursor})
	if err != nil {
		t.Fatal(err)
	}
	var fed []string
	for _, c := range changes.Changes {
		fed = append(fed, c.Event.Message.Text())
	}
	if !slices.Equal(fed, []string{"one", "two", "three"}) {
		t.Errorf("the feed after the batch: %q", fed)
	}

	// An empty batch, and one of partial events only, store nothing.
	if err := svc.AppendEvents(t.Context(), s, nil); err != nil {
		t.Errorf("an empty batch: %v", err)
	}
	if err := svc.AppendEvents(t.Context(), s, []*session.Event{{Partial: true}}); err != nil {
		t.Errorf("a batch of a partial event: %v", err)
	}

	// Every way a batch can fail leaves everything as it was.
	stored := textEvent("stored already", nil)
	if err := svc.AppendEvent(t.Context(), s, stored); err != nil {
		t.Fatal(err)
	}
	huge := textEvent(strings.Repeat("x", session.DefaultMaxEventBytes+1), nil)
	for _, tc := range []struct {
		name   string
		batch  []*session.Event
		opts   []session.AppendOption
		target error
	}{
		{"a bad event after a good one", []*session.Event{textEvent("lost", map[string]any{"user:lang": "de"}), {Message: &session.Message{Role: "user", Parts: []session.Part{{Type: "nope"}}}}}, nil, session.ErrInvalidArgument},
		{"an event over the size limit", []*session.Event{textEvent("lost", nil), huge}, nil, session.ErrInvalidArgument},
		{"an ID stored already", []*session.Event{textEvent("lost", map[string]any{"user:lang": "de"}), {ID: stored.ID, Author: "user"}}, nil, session.ErrAlreadyExists},
		{"one ID twice", []*session.Event{{ID: "twice", Author: "user"}, {ID: "twice", Author: "user"}}, nil, session.ErrInvalidArgument},
		{"a stale expected seq", []*session.Event{textEvent("lost", nil), textEvent("lost", nil)}, []session.AppendOption{session.ExpectLastSeq(2)}, session.ErrConflict},
		{"a nil event", []*session.Event{textEvent("lost", nil), nil}, nil, session.ErrInvalidArgument},
	} {
		err := svc.AppendEvents(t.Context(), s, tc.batch, tc.opts...)
		wantErr(t, tc.name, err, tc.target)
		for i, ev := range tc.batch {
			if ev != nil && ev.Seq != 0 {
				t.Errorf("%s: event %d was given seq %d", tc.name, i, ev.Seq)
			}
		}
		if s.Events().Len() != 5 || s.LastSeq() != 5 {
			t.Errorf("%s: the handle has %d events, seq %d; want it unchanged at 5", tc.name, s.Events().Len(), s.LastSeq())
		}
		got := get(t, svc, app, user, "s1")
		if got.Events().Len() != 5 || stateOf(got)["user:lang"] != "pt" {
			t.Errorf("%s: stored %d events, state %v; want them unchanged", tc.name, got.Events().Len(), stateOf(got))
		}
	}
	// The next batch follows on without a gap, and takes the right expected seq.
	next := []*session.Event{textEvent("six", nil), textEvent("seven", nil)}
	if err := svc.AppendEvents(t.Context(), s, next, session.ExpectLastSeq(5)); err != nil || next[0].Seq != 6 || next[1].Seq != 7 {
		t.Errorf("the batch after the failures: %v, seqs %d and %d", err, next[0].Seq, next[1].Seq)
	}
}

// Concurrent batches to one session are never interleaved: each batch's
// events are consecutive.
func testConcurrentBatches(t *testing.T, svc session.Service) {
	s := create(t, svc, "s1", nil)
	const writers, size = 8, 3
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			h := session.Ref(app, user, "s1")
			batch := make([]*session.Event, size)
			for i := range batch {
				batch[i] = textEvent(fmt.Sprintf("w%d", w), nil)
			}
			if err := svc.AppendEvents(t.Context(), h, batch); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got := texts(get(t, svc, app, user, s.ID()))
	if len(got) != writers*size {
		t.Fatalf("%d events stored, want %d", len(got), writers*size)
	}
	for i := 0; i < len(got); i += size {
		if got[i] != got[i+1] || got[i] != got[i+2] {
			t.Errorf("events %d to %d come from different batches: %q", i+1, i+size, got[i:i+size])
		}
	}
}
