// Package sessiontest is the conformance suite every session.Service
// backend runs, so that they all keep the semantics users rely on.
package sessiontest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/ident"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/state"
)

// Factory returns a new, empty service for one test, built with opts.
type Factory func(t *testing.T, opts ...session.Option) session.Service

// Run runs the whole suite against services made by newService.
func Run(t *testing.T, newService Factory) {
	tests := []struct {
		name string
		fn   func(t *testing.T, svc session.Service)
	}{
		{"CreateAndGet", testCreateAndGet},
		{"CreateGeneratesIDs", testCreateGeneratesIDs},
		{"CreateDuplicate", testCreateDuplicate},
		{"GetIsScopedToOwner", testGetIsScopedToOwner},
		{"AppendAndGet", testAppendAndGet},
		{"StateScopes", testStateScopes},
		{"TempStateNeverStored", testTempStateNeverStored},
		{"PartialEventsNotStored", testPartialEventsNotStored},
		{"DuplicateEventID", testDuplicateEventID},
		{"CompareAndSwap", testCompareAndSwap},
		{"StaleHandleAppends", testStaleHandleAppends},
		{"AppendThroughRef", testAppendThroughRef},
		{"PartialLoading", testPartialLoading},
		{"AfterWhenTimesGoBack", testAfterWhenTimesGoBack},
		{"List", testList},
		{"ListStableUnderInserts", testListStableUnderInserts},
		{"ListOwners", testListOwners},
		{"IDsCompareExactly", testIDsCompareExactly},
		{"Delete", testDelete},
		{"BadInputWritesNothing", testBadInputWritesNothing},
		{"SessionlessState", testSessionlessState},
		{"ReturnedValuesAreCopies", testReturnedValuesAreCopies},
		{"Changes", testChanges},
		{"ConcurrentAppends", testConcurrentAppends},
		{"ConcurrentAppendsFailAlone", testConcurrentAppendsFailAlone},
		{"FeedReaderNeverSkips", testFeedReaderNeverSkips},
		{"ConcurrentUserState", testConcurrentUserState},
		{"AppendBatch", testAppendBatch},
		{"ConcurrentBatches", testConcurrentBatches},
		{"Restore", testRestore},
		{"ErasedTombstones", testErasedTombstones},
		{"TitlesAndUpdateOrder", testTitlesAndUpdateOrder},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newService(t)) })
	}
	t.Run("DeleteHooks", func(t *testing.T) { testDeleteHooks(t, newService) })
}

const (
	app  = "app"
	user = "alice"
)

func create(t *testing.T, svc session.Service, id string, st map[string]any) session.Session {
	t.Helper()
	resp, err := svc.Create(t.Context(), &session.CreateRequest{AppName: app, UserID: user, SessionID: id, State: st})
	if err != nil {
		t.Fatalf("Create(%q): %v", id, err)
	}
	return resp.Session
}

func get(t *testing.T, svc session.Service, appName, userID, id string) session.Session {
	t.Helper()
	resp, err := svc.Get(t.Context(), &session.GetRequest{AppName: appName, UserID: userID, SessionID: id})
	if err != nil {
		t.Fatalf("Get(%q): %v", id, err)
	}
	return resp.Session
}

func appendText(t *testing.T, svc session.Service, s session.Session, text string, delta map[string]any) *session.Event {
	t.Helper()
	ev := &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, text), Actions: session.Actions{StateDelta: delta}}
	if err := svc.AppendEvent(t.Context(), s, ev); err != nil {
		t.Fatalf("AppendEvent(%q): %v", text, err)
	}
	return ev
}

func stateOf(s session.Session) map[string]any {
	return maps.Collect(s.State().All())
}

func texts(s session.Session) []string {
	var out []string
	for ev := range s.Events().All() {
		out = append(out, ev.Message.Text())
	}
	return out
}

func jsonOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("<unmarshalable: %v>", err)
	}
	return string(b)
}

func wantState(t *testing.T, what string, got, want map[string]any) {
	t.Helper()
	if jsonOf(got) != jsonOf(want) {
		t.Errorf("%s state = %s, want %s", what, jsonOf(got), jsonOf(want))
	}
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Errorf("%s: error = %v, want %v", what, err, target)
	}
}

func testCreateAndGet(t *testing.T, svc session.Service) {
	initial := map[string]any{"app:theme": "dark", "user:name": "Alice", "topic": "travel", "temp:scratch": 1}
	s := create(t, svc, "s1", initial)
	if s.ID() != "s1" || s.AppName() != app || s.UserID() != user {
		t.Fatalf("handle = (%q, %q, %q), want (s1, %s, %s)", s.ID(), s.AppName(), s.UserID(), app, user)
	}
	wantState(t, "created handle", stateOf(s), map[string]any{"app:theme": "dark", "user:name": "Alice", "topic": "travel", "temp:scratch": 1.0})
	if s.Events().Len() != 0 || s.LastSeq() != 0 {
		t.Errorf("new session has %d events, last seq %d; want none", s.Events().Len(), s.LastSeq())
	}
	if s.LastUpdateTime().IsZero() {
		t.Error("new session has no update time")
	}
	got := get(t, svc, app, user, "s1")
	wantState(t, "stored", stateOf(got), map[string]any{"app:theme": "dark", "user:name": "Alice", "topic": "travel"})
	if !got.LastUpdateTime().Equal(s.LastUpdateTime()) {
		t.Errorf("stored update time %v, handle's %v", got.LastUpdateTime(), s.LastUpdateTime())
	}
}

func testCreateGeneratesIDs(t *testing.T, svc session.Service) {
	seen := map[string]bool{}
	for range 5 {
		s := create(t, svc, "", nil)
		if s.ID() == "" || seen[s.ID()] {
			t.Fatalf("generated ID %q is empty or repeated", s.ID())
		}
		seen[s.ID()] = true
		get(t, svc, app, user, s.ID())
	}
}

func testCreateDuplicate(t *testing.T, svc session.Service) {
	create(t, svc, "s1", map[string]any{"topic": "first"})
	_, err := svc.Create(t.Context(), &session.CreateRequest{AppName: app, UserID: user, SessionID: "s1",
		State: map[string]any{"topic": "second", "user:leak": true}})
	wantErr(t, "second Create of s1", err, session.ErrAlreadyExists)
	wantState(t, "s1 after duplicate create", stateOf(get(t, svc, app, user, "s1")), map[string]any{"topic": "first"})
	// The same ID under another user is another session.
	if _, err := svc.Create(t.Context(), &session.CreateRequest{AppName: app, UserID: "bob", SessionID: "s1"}); err != nil {
		t.Errorf("Create of s1 for another user: %v", err)
	}
}

func testGetIsScopedToOwner(t *testing.T, svc session.Service) {
	s := create(t, svc, "s1", map[string]any{"secret": "alice's"})
	appendText(t, svc, s, "alice's words", nil)
	for _, o := range []struct{ app, user string }{{app, "bob"}, {"other", user}} {
		_, err := svc.Get(t.Context(), &session.GetRequest{AppName: o.app, UserID: o.user, SessionID: "s1"})
		wantErr(t, fmt.Sprintf("Get of alice's session as %s/%s", o.app, o.user), err, session.ErrNotFound)
		err = svc.Delete(t.Context(), &session.DeleteRequest{AppName: o.app, UserID: o.user, SessionID: "s1"})
		wantErr(t, fmt.Sprintf("Delete of alice's session as %s/%s", o.app, o.user), err, session.ErrNotFound)
	}
	if got := get(t, svc, app, user, "s1").Events().Len(); got != 1 {
		t.Errorf("alice's session has %d events after others' attempts, want 1", got)
	}
}

func testAppendAndGet(t *testing.T, svc session.Service) {
	s := create(t, svc, "s1", nil)
	ts := time.Date(2026, 3, 1, 12, 0, 0, 123456789, time.FixedZone("X", 3600))
	events := []*session.Event{
		{ID: "e1", InvocationID: "inv1", Author: "user", Timestamp: ts, Message: session.NewTextMessage(session.RoleUser, "What's the weather in Paris?")},
		{ID: "e2", InvocationID: "inv1", Author: "agent", Branch: "root.weather", Timestamp: ts.Add(time.Second),
			Message: &session.Message{Role: session.RoleAssistant, Parts: []session.Part{
				{Type: session.PartToolCall, ToolCall: &session.ToolCall{ID: "call-1", Name: "weather", Arguments: map[string]any{"city": "Paris"}}},
				{Type: session.PartToolCall, ToolCall: &session.ToolCall{ID: "call-2", Name: "time", Arguments: map[string]any{"tz": "CET"}}},
			}}},
		{ID: "e3", InvocationID: "inv1", Author: "tool", Timestamp: ts.Add(2 * time.Second),
			Message: &session.Message{Role: session.RoleTool, Parts: []session.Part{
				{Type: session.PartToolResult, ToolResult: &session.ToolResult{CallID: "call-1", Name: "weather", Content: map[string]any{"temp_c": 18.5}}},
				{Type: session.PartToolResult, ToolResult: &session.ToolResult{CallID: "call-2", Name: "time", Content: "14:00", IsError: false}},
			}}},
		{ID: "e4", InvocationID: "inv1", Author: "agent", Timestamp: ts.Add(3 * time.Second),
			Message:  &session.Message{Role: session.RoleAssistant, Parts: []session.Part{{Type: session.PartText, Text: "18.5°C"}, {Type: session.PartData, Data: map[string]any{"k": "v"}}, {Type: session.PartFile, File: &session.File{Name: "chart.png", MimeType: "image/png", URI: "artifact://chart.png"}}}},
			Actions:  session.Actions{ArtifactDelta: map[string]int64{"chart.png": 2}, Summary: &session.SummaryRange{FirstSeq: 1, LastSeq: 3}},
			Metadata: map[string]any{"model": "m1"}},
	}
	for i, ev := range events {
		if err := svc.AppendEvent(t.Context(), s, ev); err != nil {
			t.Fatalf("AppendEvent %d: %v", i, err)
		}
		if ev.Seq != int64(i+1) || ev.Cursor <= 0 || s.LastSeq() != ev.Seq {
			t.Errorf("event %d: seq %d cursor %d, handle last seq %d; want seq %d", i, ev.Seq, ev.Cursor, s.LastSeq(), i+1)
		}
	}
	if s.Events().Len() != len(events) {
		t.Fatalf("handle has %d events after appends, want %d", s.Events().Len(), len(events))
	}
	got := get(t, svc, app, user, "s1")
	if got.LastSeq() != 4 {
		t.Errorf("stored last seq %d, want 4", got.LastSeq())
	}
	for i, want := range events {
		for which, ev := range map[string]*session.Event{"stored": got.Events().At(i), "handle": s.Events().At(i)} {
			if ev.ID != want.ID || ev.InvocationID != want.InvocationID || ev.Author != want.Author || ev.Branch != want.Branch ||
				!ev.Timestamp.Equal(want.Timestamp) || ev.Seq != want.Seq || ev.Cursor != want.Cursor {
				t.Errorf("%s event %d = %+v, want %+v", which, i, ev, want)
			}
			if jsonOf(ev.Message) != jsonOf(want.Message) || jsonOf(ev.Actions) != jsonOf(want.Actions) || jsonOf(ev.Metadata) != jsonOf(want.Metadata) {
				t.Errorf("%s event %d content = %s %s, want %s %s", which, i, jsonOf(ev.Message), jsonOf(ev.Actions), jsonOf(want.Message), jsonOf(want.Actions))
			}
		}
	}
	if calls := got.Events().At(1).ToolCalls(); len(calls) != 2 || calls[0].ID != "call-1" {
		t.Errorf("stored tool calls = %+v", calls)
	}
	if results := got.Events().At(2).ToolResults(); len(results) != 2 || results[1].CallID != "call-2" {
		t.Errorf("stored tool results = %+v", results)
	}
	if !got.Events().At(3).IsSummary() {
		t.Error("summary marker lost")
	}
	if !got.LastUpdateTime().After(time.Now().Add(-time.Minute)) {
		t.Errorf("update time %v is not the time of the last append", got.LastUpdateTime())
	}
}

func testStateScopes(t *testing.T, svc session.Service) {
	s1 := create(t, svc, "s1", nil)
	s2 := create(t, svc, "s2", nil)
	appendText(t, svc, s1, "hi", map[string]any{"app:greeting": "hello", "user:lang": "fr", "mood": "happy", "n": 3})
	wantState(t, "s1 handle", stateOf(s1), map[string]any{"app:greeting": "hello", "user:lang": "fr", "mood": "happy", "n": 3.0})
	wantState(t, "s1 stored", stateOf(get(t, svc, app, user, "s1")), stateOf(s1))
	wantState(t, "s2 (same user)", stateOf(get(t, svc, app, user, "s2")), map[string]any{"app:greeting": "hello", "user:lang": "fr"})
	bob, err := svc.Create(t.Context(), &session.CreateRequest{AppName: app, UserID: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, "bob (same app)", stateOf(bob.Session), map[string]any{"app:greeting": "hello"})
	other, err := svc.Create(t.Context(), &session.CreateRequest{AppName: "other", UserID: user})
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, "alice in another app", stateOf(other.Session), map[string]any{})

	// nil deletes, per key: the other keys stay.
	appendText(t, svc, s2, "bye", map[string]any{"user:lang": nil, "mood": nil})
	wantState(t, "s1 after s2 deleted user:lang", stateOf(get(t, svc, app, user, "s1")), map[string]any{"app:greeting": "hello", "mood": "happy", "n": 3.0})
}

func testTempStateNeverStored(t *testing.T, svc session.Service) {
	s := create(t, svc, "s1", nil)
	ev := appendText(t, svc, s, "hi", map[string]any{"temp:plan": "step 1", "kept": true})
	if v, err := s.State().Get("temp:plan"); err != nil || v != "step 1" {
		t.Errorf("handle temp:plan = %v, %v; want step 1", v, err)
	}
	stored := get(t, svc, app, user, "s1")
	if _, err := stored.State().Get("temp:plan"); !errors.Is(err, state.ErrStateKeyNotExist) {
		t.Errorf("stored temp:plan: error %v, want ErrStateKeyNotExist", err)
	}
	if delta := stored.Events().At(0).Actions.StateDelta; jsonOf(delta) != `{"kept":true}` {
		t.Errorf("stored event's delta = %s, want only the kept key", jsonOf(delta))
	}
	if _, ok := ev.Actions.StateDelta["temp:plan"]; !ok {
		t.Error("AppendEvent changed the caller's delta")
	}
}

func testPartialEventsNotStored(t *testing.T, svc session.Service) {
	s := create(t, svc, "s1", nil)
	ev := &session.Event{Author: "agent", Partial: true, Message: session.NewTextMessage(session.RoleAssistant, "Hel"), Actions: session.Actions{StateDelta: map[string]any{"k": 1}}}
	if err := svc.AppendEvent(t.Context(), s, ev); err != nil {
		t.Fatalf("AppendEvent(partial): %v", err)
	}
	got := get(t, svc, app, user, "s1")
	if got.Events().Len() != 0 || len(stateOf(got)) != 0 || s.Events().Len() != 0 {
		t.Errorf("partial event was stored: %d events, state %v", got.Events().Len(), stateOf(got))
	}
}

func testDuplicateEventID(t *testing.T, svc session.Service) {
	s := create(t, svc, "s1", nil)
	if err := svc.AppendEvent(t.Context(), s, &session.Event{ID: "e1", Author: "user"}); err != nil {
		t.Fatal(err)
	}
	dup := &session.Event{ID: "e1", Author: "user", Actions: session.Actions{StateDelta: map[string]any{"user:x": 1}}}
	wantErr(t, "second append of e1", svc.AppendEvent(t.Context(), s, dup), session.ErrAlreadyExists)
	if dup.Seq != 0 || dup.Cursor != 0 {
		t.Errorf("failed append filled in seq %d cursor %d", dup.Seq, dup.Cursor)
	}
	if s.Events().Len() != 1 || s.LastSeq() != 1 || len(stateOf(s)) != 0 {
		t.Errorf("handle changed by a failed append: %d events, seq %d, state %v", s.Events().Len(), s.LastSeq(), stateOf(s))
	}
	got := get(t, svc, app, user, "s1")
	if got.Events().Len() != 1 || len(stateOf(got)) != 0 {
		t.Errorf("failed append wrote: %d events, state %v", got.Events().Len(), stateOf(got))
	}
	// The next append still gets the next number: the failed one left no gap.
	if ev := appendText(t, svc, s, "next", nil); ev.Seq != 2 {
		t.Errorf("seq after a failed append = %d, want 2", ev.Seq)
	}
}

func testCompareAndSwap(t *testing.T, svc session.Service) {
	s := create(t, svc, "s1", nil)
	if err := svc.AppendEvent(t.Context(), s, &session.Event{Author: "a"}, session.ExpectLastSeq(s.LastSeq())); err != nil {
		t.Fatalf("CAS append on a fresh handle: %v", err)
	}
	stale := get(t, svc, app, user, "s1")
	appendText(t, svc, s, "moved on", nil)
	ev := &session.Event{Author: "b", Actions: session.Actions{StateDelta: map[string]any{"lost": true}}}
	err := svc.AppendEvent(t.Context(), stale, ev, session.ExpectLastSeq(stale.LastSeq()))
	wantErr(t, "CAS append on a stale handle", err, session.ErrConflict)
	if stale.Events().Len() != 1 || stale.LastSeq() != 1 || ev.Seq != 0 {
		t.Errorf("failed CAS changed the handle or event: %d events, seq %d, event seq %d", stale.Events().Len(), stale.LastSeq(), ev.Seq)
	}
	got := get(t, svc, app, user, "s1")
	if got.Events().Len() != 2 || len(stateOf(got)) != 0 {
		t.Errorf("failed CAS wrote: %d events, state %v", got.Events().Len(), stateOf(got))
	}
	if err := svc.AppendEvent(t.Context(), got, &session.Event{Author: "c"}, session.ExpectLastSeq(got.LastSeq())); err != nil {
		t.Errorf("CAS append after reload: %v", err)
	}
	_, err = svc.Create(t.Context(), &session.CreateRequest{AppName: app, UserID: user, SessionID: "gone"})
	if err != nil {
		t.Fatal(err)
	}
	gone := get(t, svc, app, user, "gone")
	if err := svc.Delete(t.Context(), &session.DeleteRequest{AppName: app, UserID: user, SessionID: "gone"}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "CAS append to a deleted session", svc.AppendEvent(t.Context(), gone, &session.Event{}, session.ExpectLastSeq(0)), session.ErrNotFound)
	wantErr(t, "append to a deleted session", svc.AppendEvent(t.Context(), gone, &session.Event{}), session.ErrNotFound)
}

func testStaleHandleAppends(t *testing.T, svc session.Service) {
	a := create(t, svc, "s1", nil)
	b := get(t, svc, app, user, "s1")
	e1 := appendText(t, svc, a, "from a", nil)
	e2 := appendText(t, svc, b, "from b", nil)
	if e1.Seq != 1 || e2.Seq != 2 || e2.Cursor <= e1.Cursor {
		t.Errorf("two writers got seq %d, %d and cursors %d, %d; want 1, 2 in order", e1.Seq, e2.Seq, e1.Cursor, e2.Cursor)
	}
	if got := texts(get(t, svc, app, user, "s1")); !slices.Equal(got, []string{"from a", "from b"}) {
		t.Errorf("stored events = %q", got)
	}
}

func testAppendThroughRef(t *testing.T, svc session.Service) {
	s := create(t, svc, "s1", map[string]any{"topic": "travel"})
	appendText(t, svc, s, "loaded", nil)
	ref := session.Ref(app, user, "s1")
	ev := appendText(t, svc, ref, "by key", map[string]any{"user:lang": "fr"})
	if ev.Seq != 2 || ref.LastSeq() != 2 || ref.Events().Len() != 1 {
		t.Errorf("append through a ref: event seq %d, ref at seq %d with %d events; want 2, 2, 1", ev.Seq, ref.LastSeq(), ref.Events().Len())
	}
	wantState(t, "ref", stateOf(ref), map[string]any{"user:lang": "fr"})
	if err := svc.AppendEvent(t.Context(), session.Ref(app, user, "s1"), &session.Event{Author: "a"}, session.ExpectLastSeq(1)); !errors.Is(err, session.ErrConflict) {
		t.Errorf("CAS through a ref at a stale seq: %v, want ErrConflict", err)
	}
	// An event with no state delta, twice: the second is refused and changes nothing.
	if err := svc.AppendEvent(t.Context(), session.Ref(app, user, "s1"), &session.Event{ID: "plain", Author: "a"}); err != nil {
		t.Fatal(err)
	}
	wantErr(t, "a duplicate event with no state delta", svc.AppendEvent(t.Context(), session.Ref(app, user, "s1"), &session.Event{ID: "plain", Author: "a"}), session.ErrAlreadyExists)
	got := get(t, svc, app, user, "s1")
	if !slices.Equal(texts(got), []string{"loaded", "by key", ""}) || got.LastSeq() != 3 {
		t.Errorf("stored events = %q up to seq %d", texts(got), got.LastSeq())
	}
	wantState(t, "stored", stateOf(got), map[string]any{"topic": "travel", "user:lang": "fr"})

	for _, r := range []struct {
		name string
		ref  session.Session
		want error
	}{
		{"missing session", session.Ref(app, user, "nope"), session.ErrNotFound},
		{"another user's session", session.Ref(app, "bob", "s1"), session.ErrNotFound},
		{"empty session ID", session.Ref(app, user, ""), session.ErrInvalidArgument},
		{"control character", session.Ref(app, "al\nice", "s1"), session.ErrInvalidArgument},
	} {
		err := svc.AppendEvent(t.Context(), r.ref, &session.Event{Author: "x", Actions: session.Actions{StateDelta: map[string]any{"user:leak": true}}})
		wantErr(t, "append through a ref to a "+r.name, err, r.want)
	}
	if got := get(t, svc, app, user, "s1"); got.Events().Len() != 3 || len(stateOf(got)) != 2 {
		t.Errorf("refused appends wrote: %d events, state %v", got.Events().Len(), stateOf(got))
	}
}

func testPartialLoading(t *testing.T, svc session.Service) {
	s := create(t, svc, "s1", nil)
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10 {
		ev := &session.Event{ID: fmt.Sprint("e", i), Author: "user", Timestamp: base.Add(time.Duration(i) * time.Minute), Message: session.NewTextMessage(session.RoleUser, fmt.Sprint(i))}
		if err := svc.AppendEvent(t.Context(), s, ev); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		recent int
		after  time.Time
		before int64
		want   []string
	}{
		{0, time.Time{}, 0, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}},
		{3, time.Time{}, 0, []string{"7", "8", "9"}},
		{20, time.Time{}, 0, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}},
		{0, base.Add(6 * time.Minute), 0, []string{"7", "8", "9"}},
		{2, base.Add(6 * time.Minute), 0, []string{"8", "9"}},
		{5, base.Add(6*time.Minute + 30*time.Second), 0, []string{"7", "8", "9"}},
		{0, base.Add(time.Hour), 0, nil},
		// Paging back: events 5, 6, 7 have seq 6, 7, 8.
		{3, time.Time{}, 9, []string{"5", "6", "7"}},
		{3, time.Time{}, 3, []string{"0", "1"}},
		{3, time.Time{}, 1, nil},
		{0, time.Time{}, 4, []string{"0", "1", "2"}},
		{0, base.Add(time.Minute), 5, []string{"2", "3"}},
		{3, time.Time{}, 50, []string{"7", "8", "9"}},
	} {
		resp, err := svc.Get(t.Context(), &session.GetRequest{AppName: app, UserID: user, SessionID: "s1", NumRecentEvents: tc.recent, After: tc.after, BeforeSeq: tc.before})
		if err != nil {
			t.Fatal(err)
		}
		if got := texts(resp.Session); !slices.Equal(got, tc.want) {
			t.Errorf("Get(recent %d, after %v, before seq %d) = %q, want %q", tc.recent, tc.after, tc.before, got, tc.want)
		}
		if resp.Session.LastSeq() != 10 {
			t.Errorf("partial Get: last seq %d, want 10 whatever was loaded", resp.Session.LastSeq())
		}
	}
	_, err := svc.Get(t.Context(), &session.GetRequest{AppName: app, UserID: user, SessionID: "s1", BeforeSeq: -1})
	wantErr(t, "a negative BeforeSeq", err, session.ErrInvalidArgument)
}

func listAll(t *testing.T, svc session.Service, appName, userID string, pageSize int, between func()) []string {
	t.Helper()
	var ids []string
	token := ""
	for page := 0; ; page++ {
		resp, err := svc.List(t.Context(), &session.ListRequest{AppName: appName, UserID: userID, PageSize: pageSize, PageToken: token})
		if err != nil {
			t.Fatalf("List page %d: %v", page, err)
		}
		if pageSize > 0 && len(resp.Sessions) > pageSize {
			t.Fatalf("List page %d has %d sessions, over the page size %d", page, len(resp.Sessions), pageSize)
		}
		for _, s := range resp.Sessions {
			if s.AppName() != appName || s.UserID() != userID {
				t.Fatalf("List for %s/%s returned a session of %s/%s", appName, userID, s.AppName(), s.UserID())
			}
			ids = append(ids, s.ID())
		}
		if resp.NextPageToken == "" {
			return ids
		}
		token = resp.NextPageToken
		if between != nil {
			between()
		}
	}
}

func testList(t *testing.T, svc session.Service) {
	var want []string
	for i := range 7 {
		id := fmt.Sprintf("s%d", i)
		create(t, svc, id, map[string]any{"n": i})
		// Newest first; IDs that sort like their creation order also settle equal creation times.
		want = append([]string{id}, want...)
	}
	if _, err := svc.Create(t.Context(), &session.CreateRequest{AppName: app, UserID: "bob", SessionID: "bobs"}); err != nil {
		t.Fatal(err)
	}
	appendText(t, svc, get(t, svc, app, user, "s3"), "hi", map[string]any{"user:u": "x"})
	for _, size := range []int{0, 1, 3, 7, 100} {
		if got := listAll(t, svc, app, user, size, nil); !slices.Equal(got, want) {
			t.Errorf("List with page size %d = %q, want %q", size, got, want)
		}
	}
	resp, err := svc.List(t.Context(), &session.ListRequest{AppName: app, UserID: user, PageSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	if resp.NextPageToken != "" {
		t.Error("a page holding every session has a next page token")
	}
	for _, s := range resp.Sessions {
		if s.Events().Len() != 0 {
			t.Errorf("List returned events for %s", s.ID())
		}
		var n int
		fmt.Sscanf(s.ID(), "s%d", &n)
		wantState(t, "listed "+s.ID(), stateOf(s), map[string]any{"n": float64(n), "user:u": "x"})
		if s.ID() == "s3" && s.LastSeq() != 1 {
			t.Errorf("listed s3 has last seq %d, want 1", s.LastSeq())
		}
	}
	if got := listAll(t, svc, app, "nobody", 0, nil); len(got) != 0 {
		t.Errorf("List of a user with no sessions = %q", got)
	}
	_, err = svc.List(t.Context(), &session.ListRequest{AppName: app, UserID: user, PageToken: "not-a-token"})
	wantErr(t, "List with a bad token", err, session.ErrInvalidArgument)
	for _, size := range []int{-1, session.MaxPageSize + 1} {
		_, err = svc.List(t.Context(), &session.ListRequest{AppName: app, UserID: user, PageSize: size})
		wantErr(t, fmt.Sprintf("List with page size %d", size), err, session.ErrInvalidArgument)
	}
}

func testListStableUnderInserts(t *testing.T, svc session.Service) {
	var want []string
	for range 10 {
		s := create(t, svc, "", nil)
		want = append(want, s.ID())
	}
	n := 0
	got := listAll(t, svc, app, user, 3, func() {
		n++
		create(t, svc, fmt.Sprintf("new%d", n), nil) // lands before the pages already read
	})
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("paging while inserting saw %q, want each original session exactly once: %q", got, want)
	}
}

func testDelete(t *testing.T, svc session.Service) {
	s := create(t, svc, "s1", map[string]any{"topic": "x", "user:keep": 1})
	appendText(t, svc, s, "one", map[string]any{"more": 2})
	create(t, svc, "s2", nil)
	appendText(t, svc, get(t, svc, app, user, "s2"), "other", nil)
	if err := svc.Delete(t.Context(), &session.DeleteRequest{AppName: app, UserID: user, SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	_, err := svc.Get(t.Context(), &session.GetRequest{AppName: app, UserID: user, SessionID: "s1"})
	wantErr(t, "Get after Delete", err, session.ErrNotFound)
	wantErr(t, "second Delete", svc.Delete(t.Context(), &session.DeleteRequest{AppName: app, UserID: user, SessionID: "s1"}), session.ErrNotFound)
	// Re-created under the same ID, nothing of the old session remains; the user's state does.
	again := create(t, svc, "s1", nil)
	wantState(t, "re-created s1", stateOf(get(t, svc, app, user, "s1")), map[string]any{"user:keep": 1.0})
	if again.Events().Len() != 0 || get(t, svc, app, user, "s1").Events().Len() != 0 {
		t.Error("re-created session has the old events")
	}
	if ids := listAll(t, svc, app, user, 0, nil); !slices.Equal(ids, []string{"s1", "s2"}) {
		t.Errorf("List after delete = %q", ids)
	}
	if got := get(t, svc, app, user, "s2").Events().Len(); got != 1 {
		t.Errorf("deleting s1 touched s2: %d events", got)
	}
}

func testBadInputWritesNothing(t *testing.T, svc session.Service) {
	ctx := t.Context()
	s := create(t, svc, "s1", map[string]any{"k": "v"})
	appendText(t, svc, s, "first", nil)
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, session.ErrInvalidArgument) {
			t.Errorf("%s: error = %v, want ErrInvalidArgument", what, err)
		} else if err.Error() == session.ErrInvalidArgument.Error() {
			t.Errorf("%s: error %q does not say what was wrong", what, err)
		}
	}
	long := strings.Repeat("x", 200)
	for _, ids := range [][3]string{{"", user, "s1"}, {app, "", "s1"}, {long, user, "s1"}, {app, user, "bad\x00id"}, {app, user, "\xff"}} {
		what := fmt.Sprintf("ids %q", ids)
		_, err := svc.Create(ctx, &session.CreateRequest{AppName: ids[0], UserID: ids[1], SessionID: ids[2]})
		check("Create with "+what, err)
		_, err = svc.Get(ctx, &session.GetRequest{AppName: ids[0], UserID: ids[1], SessionID: ids[2]})
		check("Get with "+what, err)
		check("Delete with "+what, svc.Delete(ctx, &session.DeleteRequest{AppName: ids[0], UserID: ids[1], SessionID: ids[2]}))
	}
	_, err := svc.Get(ctx, &session.GetRequest{AppName: app, UserID: user, SessionID: ""})
	check("Get with empty session ID", err)
	_, err = svc.Get(ctx, &session.GetRequest{AppName: app, UserID: user, SessionID: "s1", NumRecentEvents: -1})
	check("Get with negative NumRecentEvents", err)
	_, err = svc.List(ctx, &session.ListRequest{AppName: "", UserID: user})
	check("List with empty app", err)
	_, err = svc.Create(ctx, nil)
	check("Create(nil)", err)
	_, err = svc.Changes(ctx, &session.ChangesRequest{After: -1})
	check("Changes after -1", err)

	bigValue := strings.Repeat("v", state.DefaultMaxValueBytes)
	bigEvent := strings.Repeat("w", session.DefaultMaxEventBytes)
	badDeltas := map[string]map[string]any{
		"empty key":       {"": 1},
		"bare prefix":     {"user:": 1},
		"bare app prefix": {"app:": 1},
		"channel":         {"user:c": make(chan int)},
		"function":        {"f": func() {}},
		"NaN":             {"app:n": math.NaN()},
		"+Inf":            {"x": math.Inf(1)},
		"oversized value": {"user:big": bigValue},
		"one bad key":     {"user:fine": 1, "app:": 2},
	}
	for what, delta := range badDeltas {
		_, err := svc.Create(ctx, &session.CreateRequest{AppName: app, UserID: user, SessionID: "new-" + strings.ReplaceAll(what, " ", "-"), State: delta})
		check("Create with "+what, err)
		ev := &session.Event{Author: "user", Actions: session.Actions{StateDelta: delta}}
		check("AppendEvent with "+what, svc.AppendEvent(ctx, s, ev))
	}
	badEvents := map[string]*session.Event{
		"oversized event": {Author: "user", Message: session.NewTextMessage(session.RoleUser, bigEvent)},
		"unknown part":    {Message: &session.Message{Role: "user", Parts: []session.Part{{Type: "video"}}}},
		"tool call no id": {Message: &session.Message{Role: "assistant", Parts: []session.Part{{Type: session.PartToolCall, ToolCall: &session.ToolCall{Name: "f"}}}}},
		"result no call":  {Message: &session.Message{Role: "tool", Parts: []session.Part{{Type: session.PartToolResult, ToolResult: &session.ToolResult{}}}}},
		"bad metadata":    {Metadata: map[string]any{"x": math.NaN()}},
		"bad event ID":    {ID: "a\nb"},
		"far timestamp":   {Timestamp: time.Date(3000, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for what, ev := range badEvents {
		check("AppendEvent with "+what, svc.AppendEvent(ctx, s, ev))
	}
	check("AppendEvent(nil)", svc.AppendEvent(ctx, s, nil))
	check("UpdateUserState with a bad value", svc.UpdateUserState(ctx, app, user, map[string]any{"user:ch": make(chan int)}))

	_, err = svc.Get(ctx, &session.GetRequest{AppName: app, UserID: user, SessionID: "unknown"})
	wantErr(t, "Get of an unknown session", err, session.ErrNotFound)

	got := get(t, svc, app, user, "s1")
	if got.Events().Len() != 1 || s.Events().Len() != 1 || s.LastSeq() != 1 {
		t.Errorf("bad input changed the session: stored %d events, handle %d", got.Events().Len(), s.Events().Len())
	}
	wantState(t, "after bad input", stateOf(got), map[string]any{"k": "v"})
	wantState(t, "handle after bad input", stateOf(s), map[string]any{"k": "v"})
	if ids := listAll(t, svc, app, user, 0, nil); !slices.Equal(ids, []string{"s1"}) {
		t.Errorf("bad Creates created sessions: %q", ids)
	}
	appState, _ := svc.AppState(ctx, app)
	userState, _ := svc.UserState(ctx, app, user)
	if len(appState) != 0 || len(userState) != 0 {
		t.Errorf("bad input wrote shared state: app %v, user %v", appState, userState)
	}
}

func testSessionlessState(t *testing.T, svc session.Service) {
	ctx := t.Context()
	if err := svc.UpdateAppState(ctx, app, map[string]any{"app:model": "m1", "app:gone": 1}); err != nil {
		t.Fatal(err)
	}
	if err := svc.UpdateAppState(ctx, app, map[string]any{"app:gone": nil}); err != nil {
		t.Fatal(err)
	}
	if err := svc.UpdateUserState(ctx, app, user, map[string]any{"user:tz": "CET", "user:prefs": map[string]any{"units": "metric", "n": []any{1, 2}}}); err != nil {
		t.Fatal(err)
	}
	appState, err := svc.AppState(ctx, app)
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, "app", appState, map[string]any{"app:model": "m1"})
	userState, err := svc.UserState(ctx, app, user)
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, "user", userState, map[string]any{"user:tz": "CET", "user:prefs": map[string]any{"units": "metric", "n": []any{1.0, 2.0}}})
	if other, _ := svc.UserState(ctx, app, "bob"); len(other) != 0 {
		t.Errorf("bob sees alice's user state: %v", other)
	}
	s := create(t, svc, "s1", nil)
	wantState(t, "new session", stateOf(s), map[string]any{"app:model": "m1", "user:tz": "CET", "user:prefs": map[string]any{"units": "metric", "n": []any{1.0, 2.0}}})

	for what, err := range map[string]error{
		"user key in app state":     svc.UpdateAppState(ctx, app, map[string]any{"user:x": 1}),
		"session key in user state": svc.UpdateUserState(ctx, app, user, map[string]any{"user:ok": 1, "plain": 1}),
		"temp key in user state":    svc.UpdateUserState(ctx, app, user, map[string]any{"temp:x": 1}),
	} {
		wantErr(t, what, err, session.ErrInvalidArgument)
	}
	if userState, _ := svc.UserState(ctx, app, user); userState["user:ok"] != nil {
		t.Error("a rejected user-state delta was partly applied")
	}
}

func testReturnedValuesAreCopies(t *testing.T, svc session.Service) {
	s := create(t, svc, "s1", map[string]any{"user:prefs": map[string]any{"a": 1}})
	appendText(t, svc, s, "original", nil)
	got := get(t, svc, app, user, "s1")
	got.Events().At(0).Message.Parts[0].Text = "mutated"
	got.Events().At(0).Author = "mallory"
	prefs, _ := got.State().Get("user:prefs")
	prefs.(map[string]any)["a"] = "mutated"
	_ = got.State().Set("user:prefs", "replaced")
	s.Events().At(0).Message.Parts[0].Text = "mutated too"

	again := get(t, svc, app, user, "s1")
	if ev := again.Events().At(0); ev.Message.Text() != "original" || ev.Author != "user" {
		t.Errorf("mutating a returned event changed the store: %q by %q", ev.Message.Text(), ev.Author)
	}
	wantState(t, "after mutating returned values", stateOf(again), map[string]any{"user:prefs": map[string]any{"a": 1.0}})
	if p, _ := s.State().Get("user:prefs"); jsonOf(p) != `{"a":1}` {
		t.Errorf("mutating another handle changed this one: %s", jsonOf(p))
	}
}

func allChanges(t *testing.T, svc session.Service, after int64, limit int) ([]session.Change, int64) {
	t.Helper()
	var out []session.Change
	for {
		resp, err := svc.Changes(t.Context(), &session.ChangesRequest{After: after, Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		if limit > 0 && len(resp.Changes) > limit {
			t.Fatalf("Changes returned %d, over the limit %d", len(resp.Changes), limit)
		}
		if len(resp.Changes) == 0 {
			if resp.Cursor != after {
				t.Errorf("empty page moved the cursor from %d to %d", after, resp.Cursor)
			}
			if resp.Head != after && after != 0 {
				t.Errorf("a reader that has read everything is at %d, but the head is %d", after, resp.Head)
			}
			return out, after
		}
		if resp.Head < resp.Cursor {
			t.Errorf("head %d is behind the page's cursor %d", resp.Head, resp.Cursor)
		}
		for _, c := range resp.Changes {
			if c.Cursor <= after {
				t.Fatalf("change at cursor %d is not after %d", c.Cursor, after)
			}
			after = c.Cursor
		}
		if resp.Cursor != after {
			t.Errorf("response cursor %d, want the last change's %d", resp.Cursor, after)
		}
		out = append(out, resp.Changes...)
	}
}

func describe(changes []session.Change) []string {
	var out []string
	for _, c := range changes {
		if c.Kind == session.ChangeSessionDeleted {
			out = append(out, "delete "+c.UserID+"/"+c.SessionID)
		} else {
			out = append(out, fmt.Sprintf("%s/%s#%d %s", c.UserID, c.SessionID, c.Event.Seq, c.Event.Message.Text()))
		}
	}
	return out
}

func testChanges(t *testing.T, svc session.Service) {
	start, _ := allChanges(t, svc, 0, 0)
	if len(start) != 0 {
		t.Fatalf("new store has changes: %v", describe(start))
	}
	s1 := create(t, svc, "s1", nil)
	s2 := create(t, svc, "s2", nil)
	appendText(t, svc, s1, "a", nil)
	appendText(t, svc, s2, "b", nil)
	appendText(t, svc, s1, "c", nil)
	all, cursor := allChanges(t, svc, 0, 0)
	want := []string{"alice/s1#1 a", "alice/s2#1 b", "alice/s1#2 c"}
	if got := describe(all); !slices.Equal(got, want) {
		t.Fatalf("changes = %q, want %q", got, want)
	}
	for _, limit := range []int{1, 2} {
		if got, _ := allChanges(t, svc, 0, limit); !slices.Equal(describe(got), want) {
			t.Errorf("changes in pages of %d = %q, want %q", limit, describe(got), want)
		}
	}
	if err := svc.Delete(t.Context(), &session.DeleteRequest{AppName: app, UserID: user, SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	appendText(t, svc, s2, "d", nil)
	// A reader that was caught up sees the deletion, then the new event.
	if got, _ := allChanges(t, svc, cursor, 0); !slices.Equal(describe(got), []string{"delete alice/s1", "alice/s2#2 d"}) {
		t.Errorf("changes after cursor %d = %q", cursor, describe(got))
	}
	// A reader from the start no longer sees the deleted session's events.
	if got, _ := allChanges(t, svc, 0, 0); !slices.Equal(describe(got), []string{"alice/s2#1 b", "delete alice/s1", "alice/s2#2 d"}) {
		t.Errorf("changes from the start = %q", describe(got))
	}
	_, err := svc.Changes(t.Context(), &session.ChangesRequest{Limit: session.MaxChangesLimit + 1})
	wantErr(t, "Changes over the maximum limit", err, session.ErrInvalidArgument)
}

// testFeedReaderNeverSkips reads the change feed while writers append to
// sessions of their own (nothing orders their commits): a reader that
// passed a cursor whose append committed later would never see it.
func testFeedReaderNeverSkips(t *testing.T, svc session.Service) {
	const writers, perWriter = 16, 60
	handles := make([]session.Session, writers)
	for w := range writers {
		handles[w] = create(t, svc, fmt.Sprintf("s%d", w), nil)
	}
	start, _ := allChanges(t, svc, 0, 0)
	after := int64(0)
	if len(start) > 0 {
		after = start[len(start)-1].Cursor
	}
	seen := map[string]int{}
	read := func() int {
		resp, err := svc.Changes(t.Context(), &session.ChangesRequest{After: after, Limit: 50})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range resp.Changes {
			seen[c.Event.ID]++
		}
		after = resp.Cursor
		return len(resp.Changes)
	}
	var wg sync.WaitGroup
	done := make(chan struct{})
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				if err := svc.AppendEvent(context.Background(), handles[w], &session.Event{ID: fmt.Sprintf("w%d-%d", w, i), Author: "user"}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	go func() { wg.Wait(); close(done) }()
	for reading := true; reading; {
		select {
		case <-done:
			reading = false
		default:
			read()
		}
	}
	for read() > 0 { // what committed after the last read
	}
	for w := range writers {
		for i := range perWriter {
			if id := fmt.Sprintf("w%d-%d", w, i); seen[id] != 1 {
				t.Errorf("the feed reader saw event %s %d times, want once", id, seen[id])
			}
		}
	}
}

func testConcurrentAppends(t *testing.T, svc session.Service) {
	const writers, perWriter = 16, 200
	s := create(t, svc, "s1", nil)
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wg.Go(func() {
			h := get(t, svc, app, user, "s1") // each writer its own handle, as separate requests would
			if w%2 == 0 {
				h = s // and some share one
			}
			for i := range perWriter {
				ev := &session.Event{ID: fmt.Sprintf("w%d-%d", w, i), Author: "user"}
				if err := svc.AppendEvent(context.Background(), h, ev); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent append: %v", err)
	}
	got := get(t, svc, app, user, "s1")
	if got.Events().Len() != writers*perWriter || got.LastSeq() != writers*perWriter {
		t.Fatalf("stored %d events, last seq %d; want %d", got.Events().Len(), got.LastSeq(), writers*perWriter)
	}
	ids := map[string]bool{}
	var lastCursor int64
	for i := range got.Events().Len() {
		ev := got.Events().At(i)
		if ev.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: sequence has a gap or repeat", i, ev.Seq)
		}
		if ev.Cursor <= lastCursor {
			t.Fatalf("event seq %d has cursor %d, not after %d", ev.Seq, ev.Cursor, lastCursor)
		}
		lastCursor = ev.Cursor
		ids[ev.ID] = true
	}
	if len(ids) != writers*perWriter {
		t.Errorf("%d distinct event IDs stored, want %d", len(ids), writers*perWriter)
	}
	// Each writer's own events are in the order it appended them.
	next := map[string]int{}
	for ev := range got.Events().All() {
		var w, i int
		fmt.Sscanf(ev.ID, "w%d-%d", &w, &i)
		if key := fmt.Sprint(w); next[key] != i {
			t.Fatalf("writer %d's event %d stored out of order (expected %d)", w, i, next[key])
		} else {
			next[key]++
		}
	}
}

func testConcurrentUserState(t *testing.T, svc session.Service) {
	const rounds = 50
	s1 := create(t, svc, "s1", nil)
	s2 := create(t, svc, "s2", nil)
	var wg sync.WaitGroup
	for i, s := range []session.Session{s1, s2} {
		wg.Go(func() {
			for r := range rounds {
				ev := &session.Event{Author: "user", Actions: session.Actions{StateDelta: map[string]any{
					fmt.Sprintf("user:from_s%d", i+1): r, "app:shared": r, "mine": r,
				}}}
				if err := svc.AppendEvent(context.Background(), s, ev); err != nil {
					t.Errorf("append to %s: %v", s.ID(), err)
					return
				}
			}
		})
	}
	wg.Wait()
	userState, err := svc.UserState(t.Context(), app, user)
	if err != nil {
		t.Fatal(err)
	}
	wantState(t, "user after concurrent writes", userState, map[string]any{"user:from_s1": float64(rounds - 1), "user:from_s2": float64(rounds - 1)})
	for _, id := range []string{"s1", "s2"} {
		if v, _ := get(t, svc, app, user, id).State().Get("mine"); v != float64(rounds-1) {
			t.Errorf("%s's own key = %v, want %d", id, v, rounds-1)
		}
	}
}

// A delete hook runs before the session goes, so that whatever stops a
// Delete leaves nothing behind a deleted session, and once more after.
func testDeleteHooks(t *testing.T, newService Factory) {
	var calls []string
	failNext := true
	hook := func(ctx context.Context, appName, userID, sessionID string) error {
		calls = append(calls, appName+"/"+userID+"/"+sessionID)
		if failNext {
			failNext = false
			return errors.New("artifact store unreachable")
		}
		return nil
	}
	svc := newService(t, session.WithDeleteHook(hook))
	create(t, svc, "s1", nil)
	del := &session.DeleteRequest{AppName: app, UserID: user, SessionID: "s1"}
	err := svc.Delete(t.Context(), del)
	if err == nil || !strings.Contains(err.Error(), "artifact store unreachable") || !strings.Contains(err.Error(), "again") {
		t.Errorf("Delete with a failing hook: error %v, want the hook's error and how to retry", err)
	}
	if _, err := svc.Get(t.Context(), &session.GetRequest{AppName: app, UserID: user, SessionID: "s1"}); err != nil {
		t.Errorf("a Delete whose hook failed before it deleted anything deleted the session: Get = %v", err)
	}
	if err := svc.Delete(t.Context(), del); err != nil {
		t.Fatalf("retried Delete: %v", err)
	}
	_, err = svc.Get(t.Context(), &session.GetRequest{AppName: app, UserID: user, SessionID: "s1"})
	wantErr(t, "Get after the retried Delete", err, session.ErrNotFound)
	wantErr(t, "Delete of a deleted session", svc.Delete(t.Context(), del), session.ErrNotFound)
	// The failed try, the retry before and after, the Delete of a deleted session.
	if want := slices.Repeat([]string{"app/alice/s1"}, 4); !slices.Equal(calls, want) {
		t.Errorf("hook calls = %q, want %q", calls, want)
	}
	_ = svc.Delete(t.Context(), &session.DeleteRequest{AppName: "", UserID: user, SessionID: "s1"})
	if len(calls) != 4 {
		t.Errorf("a Delete with bad input ran the hook: %q", calls)
	}
}

func testListOwners(t *testing.T, svc session.Service) {
	lister, ok := svc.(session.OwnerLister)
	if !ok {
		t.Skip("n/a: this backend does not list owners")
	}
	ctx := t.Context()
	for _, o := range [][3]string{{"a", "alice", "s1"}, {"a", "alice", "s2"}, {"a", "bob", "s1"}, {"b", "carol", "s1"}} {
		if _, err := svc.Create(ctx, &session.CreateRequest{AppName: o[0], UserID: o[1], SessionID: o[2]}); err != nil {
			t.Fatal(err)
		}
	}
	page, err := lister.ListOwners(ctx, &session.OwnersRequest{PageSize: 2})
	if err != nil || len(page.Owners) != 2 || page.NextPageToken == "" ||
		page.Owners[0].UserID != "alice" || page.Owners[0].Sessions != 2 || page.Owners[0].LastUpdate.IsZero() || page.Owners[1].UserID != "bob" {
		t.Fatalf("first page = %+v, %v", page, err)
	}
	page, err = lister.ListOwners(ctx, &session.OwnersRequest{PageSize: 2, PageToken: page.NextPageToken})
	if err != nil || len(page.Owners) != 1 || page.Owners[0].AppName != "b" || page.NextPageToken != "" {
		t.Fatalf("second page = %+v, %v", page, err)
	}
	if err := svc.Delete(ctx, &session.DeleteRequest{AppName: "a", UserID: "bob", SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	page, err = lister.ListOwners(ctx, &session.OwnersRequest{AppName: "a"})
	if err != nil || len(page.Owners) != 1 || page.Owners[0].UserID != "alice" {
		t.Errorf("app a after deleting bob's only session = %+v, %v", page, err)
	}
	if _, err := lister.ListOwners(ctx, &session.OwnersRequest{PageToken: "garbage"}); !errors.Is(err, session.ErrInvalidArgument) {
		t.Errorf("a bad page token: %v", err)
	}
}

// IDs are compared byte for byte on every backend: case and trailing
// spaces make different users and sessions.
func testIDsCompareExactly(t *testing.T, svc session.Service) {
	ctx := t.Context()
	for _, user := range []string{"alice", "Alice"} {
		if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: user, SessionID: "s", State: map[string]any{"who": user}}); err != nil {
			t.Fatalf("Create for %q: %v", user, err)
		}
	}
	for _, user := range []string{"alice", "Alice"} {
		got, err := svc.Get(ctx, &session.GetRequest{AppName: "app", UserID: user, SessionID: "s"})
		if err != nil {
			t.Fatal(err)
		}
		if v, _ := got.Session.State().Get("who"); v != user {
			t.Errorf("%q's session holds the state of %v", user, v)
		}
	}
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "alice", SessionID: "S"}); err != nil {
		t.Errorf("session S beside s: %v", err)
	}
	// The longest IDs are counted in characters, as the SQL columns hold
	// them: 128 of them, 2 to 4 bytes each, fit every backend.
	long := func(c string) string { return strings.Repeat(c, ident.MaxChars) }
	appName, userID, sessionID := long("é"), long("日"), long("😀")
	if _, err := svc.Create(ctx, &session.CreateRequest{AppName: appName, UserID: userID, SessionID: sessionID,
		State: map[string]any{"user:long": true}}); err != nil {
		t.Fatalf("Create with IDs of %d characters: %v", ident.MaxChars, err)
	}
	got, err := svc.Get(ctx, &session.GetRequest{AppName: appName, UserID: userID, SessionID: sessionID})
	if err != nil || got.Session.ID() != sessionID || got.Session.UserID() != userID || got.Session.AppName() != appName {
		t.Fatalf("Get with IDs of %d characters: %v", ident.MaxChars, err)
	}
	if v, _ := got.Session.State().Get("user:long"); v != true {
		t.Errorf("user state under long IDs: %v", v)
	}
}

// Concurrent appends fail alone: a duplicate event or a stale
// compare-and-swap among many good appends (which a backend may commit
// together) fails that append only, with its own error, and every other
// append is stored.
// testConcurrentAppendsFailAlone: 128 writers on 16 sessions, one bad
// append in every five (a duplicate event ID, a stale compare-and-swap).
// The bad ones fail alone, with their own errors and no trace in state;
// every good one is stored, with gap-free sequence numbers per session.
func testConcurrentAppendsFailAlone(t *testing.T, svc session.Service) {
	const sessions, writers, perWriter = 16, 128, 10
	for i := range sessions {
		create(t, svc, fmt.Sprintf("s%d", i), nil)
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			id := fmt.Sprintf("s%d", w%sessions)
			h := get(t, svc, app, user, id)
			for i := range perWriter {
				ev := &session.Event{ID: fmt.Sprintf("w%d-e%d", w, i), Author: "user", Actions: session.Actions{StateDelta: map[string]any{fmt.Sprintf("w%d", w): i}}}
				var opts []session.AppendOption
				switch {
				case i%5 == 3:
					ev.ID = fmt.Sprintf("w%d-e0", w) // a duplicate of this writer's first event
				case i%5 == 4:
					opts = append(opts, session.ExpectLastSeq(0)) // long stale
				}
				err := svc.AppendEvent(context.Background(), h, ev, opts...)
				switch {
				case i%5 == 3 && !errors.Is(err, session.ErrAlreadyExists):
					t.Errorf("%s: a duplicate event: %v, want ErrAlreadyExists", id, err)
				case i%5 == 4 && !errors.Is(err, session.ErrConflict):
					t.Errorf("%s: a stale compare-and-swap: %v, want ErrConflict", id, err)
				case i%5 < 3 && err != nil:
					t.Errorf("%s: a good append beside bad ones: %v", id, err)
				}
			}
		})
	}
	wg.Wait()
	const good = writers / sessions * perWriter * 3 / 5
	for i := range sessions {
		id := fmt.Sprintf("s%d", i)
		got := get(t, svc, app, user, id)
		if got.Events().Len() != good || got.LastSeq() != good {
			t.Errorf("%s holds %d events up to seq %d, want %d", id, got.Events().Len(), got.LastSeq(), good)
		}
		for j := range got.Events().Len() {
			if ev := got.Events().At(j); ev.Seq != int64(j+1) || !strings.HasPrefix(ev.ID, "w") || strings.HasSuffix(ev.ID, "e3") || strings.HasSuffix(ev.ID, "e4") {
				t.Errorf("%s: event %d is %s at seq %d", id, j, ev.ID, ev.Seq)
			}
		}
		for w := i; w < writers; w += sessions {
			// The last good append of each writer is its 8th (i = 7); a failed one changes no state.
			if v, _ := got.State().Get(fmt.Sprintf("w%d", w)); v != float64(perWriter-3) {
				t.Errorf("%s: state w%d = %v, want %d", id, w, v, perWriter-3)
			}
		}
	}
}
