package session_test

import (
	"testing"

	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

// TestPostgresCursorsGoOnPastTheOldHead: a database whose cursors came from
// change_feed_head, before PostgreSQL took them from a sequence, goes on
// past the last one handed out, and a later start moves nothing back.
func TestPostgresCursorsGoOnPastTheOldHead(t *testing.T) {
	db := sqldbtest.Postgres(t)
	newSQL(t, db)
	// As the tables were left by a version without the sequence.
	if err := db.Exec("DROP SEQUENCE hector_feed_cursor").Error; err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("UPDATE change_feed_head SET last_cursor = 500 WHERE id = 1").Error; err != nil {
		t.Fatal(err)
	}
	appendOne := func(svc session.Service, id string) int64 {
		t.Helper()
		if _, err := svc.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: id}); err != nil {
			t.Fatal(err)
		}
		ev := &session.Event{Author: "user"}
		if err := svc.AppendEvent(t.Context(), session.Ref("app", "u", id), ev); err != nil {
			t.Fatal(err)
		}
		return ev.Cursor
	}
	if c := appendOne(newSQL(t, db), "s1"); c != 501 {
		t.Errorf("first append after the upgrade has cursor %d, want 501", c)
	}
	if c := appendOne(newSQL(t, db), "s2"); c != 502 {
		t.Errorf("append after another start has cursor %d, want 502", c)
	}
}
