package sessiontest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/session"
)

// Get's After returns every event whose timestamp is after it, in sequence
// order, however the timestamps came: in order, equal, or going back
// within a batch, across appends or in a restored session. (A SQL store
// finds them by walking back from the newest event while the session's
// timestamps are in order, and must notice when they stop being.)
func testAfterWhenTimesGoBack(t *testing.T, svc session.Service) {
	base := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	at := func(minute int) *session.Event {
		return &session.Event{Author: "user", Timestamp: base.Add(time.Duration(minute) * time.Minute),
			Message: session.NewTextMessage(session.RoleUser, fmt.Sprint(minute))}
	}
	events := func(minutes ...int) []*session.Event {
		evs := make([]*session.Event, len(minutes))
		for i, m := range minutes {
			evs[i] = at(m)
		}
		return evs
	}
	add := func(s session.Session, minutes ...int) {
		t.Helper()
		if err := svc.AppendEvents(t.Context(), s, events(minutes...)); err != nil {
			t.Fatal(err)
		}
	}
	check := func(id string, after, recent int, want ...string) {
		t.Helper()
		resp, err := svc.Get(t.Context(), &session.GetRequest{AppName: app, UserID: user, SessionID: id,
			After: base.Add(time.Duration(after) * time.Minute), NumRecentEvents: recent})
		if err != nil {
			t.Fatal(err)
		}
		if got := texts(resp.Session); !slices.Equal(got, want) {
			t.Errorf("%s: Get(after minute %d, recent %d) = %q, want %q", id, after, recent, got, want)
		}
	}

	inOrder := create(t, svc, "in-order", nil)
	for _, m := range []int{10, 20, 20, 30} {
		add(inOrder, m)
	}
	check("in-order", 25, 0, "30")
	check("in-order", 20, 0, "30")
	check("in-order", 15, 0, "20", "20", "30")
	check("in-order", 15, 2, "20", "30")
	check("in-order", 9, 0, "10", "20", "20", "30")
	check("in-order", 30, 0)
	add(inOrder, 5) // back in time: every event is compared from now on
	add(inOrder, 40)
	check("in-order", 15, 0, "20", "20", "30", "40")
	check("in-order", 4, 0, "10", "20", "20", "30", "5", "40")
	check("in-order", 4, 2, "5", "40")

	batch := create(t, svc, "batch-goes-back", nil)
	add(batch, 10, 30, 20)
	check("batch-goes-back", 15, 0, "30", "20")
	check("batch-goes-back", 25, 0, "30")

	behind := create(t, svc, "batch-behind", nil)
	add(behind, 30)
	add(behind, 10, 40)
	check("batch-behind", 20, 0, "30", "40")
	check("batch-behind", 5, 0, "30", "10", "40")

	if r, ok := svc.(session.Restorer); ok {
		for id, minutes := range map[string][]int{"restored-in-order": {10, 20, 30}, "restored-goes-back": {30, 10, 20}} {
			if _, err := r.Restore(t.Context(), &session.RestoreRequest{AppName: app, UserID: user, SessionID: id, Events: events(minutes...)}); err != nil {
				t.Fatal(err)
			}
		}
		check("restored-in-order", 15, 0, "20", "30")
		check("restored-goes-back", 15, 0, "30", "20")
		add(session.Ref(app, user, "restored-in-order"), 5)
		check("restored-in-order", 15, 0, "20", "30")
		check("restored-in-order", 1, 0, "10", "20", "30", "5")
	}
}
