package artifacts_test

import (
	"context"
	"errors"
	"testing"

	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

// TestWithSessions shows the wiring a server does: artifacts in the
// sessions' database, saves recorded in the event's ArtifactDelta, and
// deleting a session deleting its artifacts but not its user's.
func TestWithSessions(t *testing.T) {
	db := sqldbtest.SQLite(t)
	arts, err := artifacts.NewSQL(db)
	if err != nil {
		t.Fatal(err)
	}
	sessions, err := session.NewSQLService(db, session.WithDeleteHook(arts.DeleteSession))
	if err != nil {
		t.Fatal(err)
	}
	defer sessions.Close()
	created, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	h := artifacts.NewHandle(t.Context(), arts, "app", "u", "s1")
	for _, a := range []*artifacts.Artifact{
		{Name: "chart.png", MimeType: "image/png", Data: []byte("v1")},
		{Name: "chart.png", MimeType: "image/png", Data: []byte("v2")},
		{Name: "user:prefs.json", MimeType: "application/json", Data: []byte(`{}`)},
	} {
		if _, err := h.Save(a); err != nil {
			t.Fatal(err)
		}
	}
	ev := &session.Event{Author: "agent", Message: session.NewTextMessage(session.RoleAssistant, "Here is your chart."),
		Actions: session.Actions{ArtifactDelta: h.Delta()}}
	if err := sessions.AppendEvent(t.Context(), created.Session, ev); err != nil {
		t.Fatal(err)
	}
	got, err := sessions.Get(t.Context(), &session.GetRequest{AppName: "app", UserID: "u", SessionID: "s1"})
	if err != nil {
		t.Fatal(err)
	}
	if d := got.Session.Events().At(0).Actions.ArtifactDelta; len(d) != 2 || d["chart.png"] != 2 || d["user:prefs.json"] != 1 {
		t.Errorf("stored ArtifactDelta = %v", d)
	}

	if err := sessions.Delete(t.Context(), &session.DeleteRequest{AppName: "app", UserID: "u", SessionID: "s1"}); err != nil {
		t.Fatal(err)
	}
	left, err := arts.List(t.Context(), "app", "u", "s1")
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 1 || left[0].Name != "user:prefs.json" {
		t.Errorf("after deleting the session, artifacts left: %+v; want only the user's", left)
	}
	var chunks int64
	db.Table("artifact_chunks").Count(&chunks)
	if chunks != 1 {
		t.Errorf("%d content chunks left, want the user artifact's 1", chunks)
	}
}

// A session's artifacts go before its row: a Delete stopped once the row
// is gone (here a hook that fails then, run ahead of the artifacts' own)
// leaves none behind, to show up again when the session ID is used again.
func TestAStoppedDeleteLeavesNoArtifactBehind(t *testing.T) {
	ctx := t.Context()
	db := sqldbtest.SQLite(t)
	arts, err := artifacts.NewSQL(db)
	if err != nil {
		t.Fatal(err)
	}
	var sessions *session.SQLService
	dieOnceGone := func(ctx context.Context, app, user, id string) error {
		if _, err := sessions.Get(ctx, &session.GetRequest{AppName: app, UserID: user, SessionID: id}); errors.Is(err, session.ErrNotFound) {
			return errors.New("the process died")
		}
		return nil
	}
	sessions, err = session.NewSQLService(db, session.WithDeleteHook(dieOnceGone), session.WithDeleteHook(arts.DeleteSession))
	if err != nil {
		t.Fatal(err)
	}
	defer sessions.Close()
	create := func() {
		t.Helper()
		if _, err := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: "s1"}); err != nil {
			t.Fatal(err)
		}
	}
	create()
	if _, err := artifacts.NewHandle(ctx, arts, "app", "u", "s1").Save(&artifacts.Artifact{Name: "old.txt", Data: []byte("before")}); err != nil {
		t.Fatal(err)
	}
	if err := sessions.Delete(ctx, &session.DeleteRequest{AppName: "app", UserID: "u", SessionID: "s1"}); err == nil {
		t.Fatal("the Delete did not stop where it was made to")
	}
	create()
	if left, err := arts.List(ctx, "app", "u", "s1"); err != nil || len(left) != 0 {
		t.Errorf("the session made again shows %+v, %v; want none of the deleted one's artifacts", left, err)
	}
}
