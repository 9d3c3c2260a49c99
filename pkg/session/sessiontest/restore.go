package sessiontest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/session"
)

// testRestore: a session written back as an export recorded it reads as it
// did, its events enter the change feed, and the deltas they carry change
// no shared state.
func testRestore(t *testing.T, svc session.Service) {
	r, ok := svc.(session.Restorer)
	if !ok {
		t.Fatalf("%T is not a session.Restorer", svc)
	}
	ctx := t.Context()
	if err := svc.UpdateUserState(ctx, app, user, map[string]any{"user:name": "Alice now"}); err != nil {
		t.Fatal(err)
	}
	_, head := allChanges(t, svc, 0, 0)
	at := time.Date(2024, 3, 1, 10, 0, 0, 123456789, time.UTC)
	events := []*session.Event{
		{ID: "e-1", Author: "user", Timestamp: at, Message: session.NewTextMessage(session.RoleUser, "hello"),
			Actions: session.Actions{StateDelta: map[string]any{"user:name": "Alice then", "app:theme": "old", "topic": "x"}}},
		{ID: "e-2", Author: "bot", Timestamp: at.Add(time.Second), Message: session.NewTextMessage(session.RoleAssistant, "hi")},
	}
	updated := at.Add(time.Minute)
	req := &session.RestoreRequest{AppName: app, UserID: user, SessionID: "old", State: map[string]any{"topic": "x"}, Events: events, LastUpdateTime: updated}
	s, err := r.Restore(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	got := get(t, svc, app, user, "old")
	for _, h := range []session.Session{s, got} {
		if ts := texts(h); len(ts) != 2 || ts[0] != "hello" || ts[1] != "hi" {
			t.Fatalf("restored events = %q", ts)
		}
		if !h.LastUpdateTime().Equal(updated) || h.LastSeq() != 2 {
			t.Errorf("restored session: last update %s, last seq %d; want %s, 2", h.LastUpdateTime(), h.LastSeq(), updated)
		}
		wantState(t, "restored session", stateOf(h), map[string]any{"topic": "x", "user:name": "Alice now"})
	}
	for i := range got.Events().Len() {
		ev, want := got.Events().At(i), events[i]
		if ev.ID != want.ID || !ev.Timestamp.Equal(want.Timestamp) || ev.Seq != int64(i+1) || ev.Author != want.Author {
			t.Errorf("event %d = %s %s #%d by %s, want %s %s #%d by %s", i, ev.ID, ev.Timestamp, ev.Seq, ev.Author, want.ID, want.Timestamp, i+1, want.Author)
		}
	}
	if d := got.Events().At(0).Actions.StateDelta; jsonOf(d) != `{"app:theme":"old","topic":"x","user:name":"Alice then"}` {
		t.Errorf("the first event's delta = %s, want it kept as it was", jsonOf(d))
	}
	if st, _ := svc.AppState(ctx, app); len(st) != 0 {
		t.Errorf("restoring applied an event's app: delta again: %v", st)
	}
	changes, _ := allChanges(t, svc, head, 0)
	if d := describe(changes); len(d) != 2 || d[0] != "alice/old#1 hello" || d[1] != "alice/old#2 hi" {
		t.Errorf("change feed after the restore = %q", d)
	}
	if ids := listAll(t, svc, app, user, 10, nil); len(ids) != 1 || ids[0] != "old" {
		t.Errorf("List = %q", ids)
	}

	_, err = r.Restore(ctx, req)
	wantErr(t, "restoring an existing session", err, session.ErrAlreadyExists)
	bad := []*session.RestoreRequest{
		{AppName: app, UserID: user, SessionID: "b1", State: map[string]any{"user:name": "x"}},
		{AppName: app, UserID: user, SessionID: "b2", Events: []*session.Event{{ID: "same"}, {ID: "same"}}},
		{AppName: app, UserID: user, SessionID: "b3\x00"},
		nil,
	}
	for i, req := range bad {
		_, err := r.Restore(ctx, req)
		wantErr(t, "a bad restore", err, session.ErrInvalidArgument)
		if req != nil {
			if _, err := svc.Get(ctx, &session.GetRequest{AppName: app, UserID: user, SessionID: req.SessionID}); err == nil {
				t.Errorf("bad restore %d created its session", i)
			}
		}
	}
}

// testErasedTombstones: erasing a user's tombstones leaves no change that
// names them, and never lets a cursor be handed out again: an append
// after it gets a cursor past every one readers have seen.
func testErasedTombstones(t *testing.T, svc session.Service) {
	eraser, ok := svc.(session.TombstoneEraser)
	if !ok {
		t.Skipf("n/a: %T keeps no tombstones", svc)
	}
	ctx := t.Context()
	s := create(t, svc, "gone", nil)
	appendText(t, svc, s, "hello", nil)
	for _, id := range []string{"gone", "also-gone"} {
		if id != "gone" {
			create(t, svc, id, nil)
		}
		if err := svc.Delete(ctx, &session.DeleteRequest{AppName: app, UserID: user, SessionID: id}); err != nil {
			t.Fatal(err)
		}
	}
	_, seen := allChanges(t, svc, 0, 0)
	lineage := func() session.Lineage {
		l, ok := svc.(session.LineageReader)
		if !ok {
			t.Fatalf("%T names no lineage", svc)
		}
		lin, err := l.Lineage(ctx)
		if err != nil || lin.StoreID == "" {
			t.Fatalf("Lineage = %+v, %v", lin, err)
		}
		return lin
	}
	before := lineage()
	if n, err := eraser.EraseTombstones(ctx, app, user); err != nil || n != 2 {
		t.Fatalf("EraseTombstones = %d, %v; want 2", n, err)
	}
	if after := lineage(); after.StoreID != before.StoreID || after.Erasures != before.Erasures+1 {
		t.Errorf("Lineage after an erasure = %+v, was %+v: want one erasure more, the same store", after, before)
	}
	changes, _ := allChanges(t, svc, 0, 0)
	if d := describe(changes); len(d) != 0 {
		t.Errorf("the feed after erasing names the user still: %q", d)
	}
	// The erased changes were the newest: the lineage's head is still the
	// highest cursor handed out, which readers may have passed.
	if lin := lineage(); lin.Head < seen {
		t.Errorf("Lineage after erasing the newest changes: head %d, and a reader has seen %d", lin.Head, seen)
	}
	bob, err := svc.Create(ctx, &session.CreateRequest{AppName: app, UserID: "bob", SessionID: "b"})
	if err != nil {
		t.Fatal(err)
	}
	ev := appendText(t, svc, bob.Session, "after", nil)
	if ev.Cursor <= seen {
		t.Errorf("an append after the erasure got cursor %d, which a reader at %d has passed", ev.Cursor, seen)
	}
	if changes, _ := allChanges(t, svc, seen, 0); len(changes) != 1 || changes[0].Event.ID != ev.ID {
		t.Errorf("a reader at %d sees %q", seen, describe(changes))
	}
}

// testTitlesAndUpdateOrder: a session's title is set at creation and by
// SetTitle, read back by Get and List, refused when too long or with
// control characters; List by update puts the session written last first
// and pages in that order.
func testTitlesAndUpdateOrder(t *testing.T, svc session.Service) {
	ctx := t.Context()
	resp, err := svc.Create(ctx, &session.CreateRequest{AppName: app, UserID: user, SessionID: "a", Title: "Trip to Lisbon"})
	if err != nil || resp.Session.Title() != "Trip to Lisbon" {
		t.Fatalf("Create with a title: %v, %q", err, resp.Session.Title())
	}
	b := create(t, svc, "b", nil)
	create(t, svc, "c", nil)
	if got := get(t, svc, app, user, "a").Title(); got != "Trip to Lisbon" {
		t.Errorf("Get: title %q", got)
	}
	if err := svc.SetTitle(ctx, &session.SetTitleRequest{AppName: app, UserID: user, SessionID: "b", Title: "Groceries"}); err != nil {
		t.Fatal(err)
	}
	if err := svc.SetTitle(ctx, &session.SetTitleRequest{AppName: app, UserID: user, SessionID: "b", Title: "Groceries"}); err != nil {
		t.Errorf("setting the same title again: %v", err)
	}
	for _, bad := range []string{strings.Repeat("x", session.MaxTitleChars+1), "line\nbreak", "\xff"} {
		err := svc.SetTitle(ctx, &session.SetTitleRequest{AppName: app, UserID: user, SessionID: "b", Title: bad})
		wantErr(t, "a bad title", err, session.ErrInvalidArgument)
		_, err = svc.Create(ctx, &session.CreateRequest{AppName: app, UserID: user, SessionID: "bad", Title: bad})
		wantErr(t, "creating with a bad title", err, session.ErrInvalidArgument)
	}
	err = svc.SetTitle(ctx, &session.SetTitleRequest{AppName: app, UserID: user, SessionID: "nothing", Title: "x"})
	wantErr(t, "titling a session that does not exist", err, session.ErrNotFound)
	appendText(t, svc, b, "written last", nil)

	byCreation := listAll(t, svc, app, user, 2, nil)
	if !slices.Equal(byCreation, []string{"c", "b", "a"}) {
		t.Errorf("by creation: %q", byCreation)
	}
	var byUpdate []string
	titles := map[string]string{}
	req := &session.ListRequest{AppName: app, UserID: user, PageSize: 2, ByUpdate: true}
	for {
		page, err := svc.List(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range page.Sessions {
			byUpdate = append(byUpdate, s.ID())
			titles[s.ID()] = s.Title()
		}
		if page.NextPageToken == "" {
			break
		}
		req.PageToken = page.NextPageToken
	}
	if !slices.Equal(byUpdate, []string{"b", "c", "a"}) {
		t.Errorf("by update: %q", byUpdate)
	}
	if titles["a"] != "Trip to Lisbon" || titles["b"] != "Groceries" || titles["c"] != "" {
		t.Errorf("titles listed: %q", titles)
	}
	// A page token goes on in its own order only.
	first, _ := svc.List(ctx, &session.ListRequest{AppName: app, UserID: user, PageSize: 1, ByUpdate: true})
	_, err = svc.List(ctx, &session.ListRequest{AppName: app, UserID: user, PageSize: 1, PageToken: first.NextPageToken})
	wantErr(t, "a by-update token in a by-creation listing", err, session.ErrInvalidArgument)
}
