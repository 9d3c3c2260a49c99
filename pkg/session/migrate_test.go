package session_test

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

// TestEventColumnsMoveIntoPayloads: a database from before invocation IDs,
// authors and branches moved into event payloads opens with every event as
// it was stored, in more batches than one, and the columns are gone.
func TestEventColumnsMoveIntoPayloads(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *gorm.DB{"sqlite": sqldbtest.SQLite, "postgres": sqldbtest.Postgres, "mysql": sqldbtest.MySQL} {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			svc := newSQL(t, db)
			const n = 2500
			for _, id := range []string{"s1", "s2"} {
				if _, err := svc.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: id}); err != nil {
					t.Fatal(err)
				}
			}
			for i := range n {
				ev := &session.Event{Message: session.NewTextMessage(session.RoleUser, fmt.Sprintf("message %d \u00e9\"\\", i))}
				if err := svc.AppendEvent(t.Context(), session.Ref("app", "u", []string{"s1", "s2"}[i%2]), ev); err != nil {
					t.Fatal(err)
				}
			}
			// As an earlier version stored them: the three as columns,
			// empty or NULL for some events.
			for _, col := range []string{"invocation_id", "author", "branch"} {
				if err := db.Exec("ALTER TABLE events ADD COLUMN " + col + " VARCHAR(256)").Error; err != nil {
					t.Fatal(err)
				}
			}
			old := "UPDATE events SET invocation_id = 'inv-' || feed_cursor, author = 'user', branch = CASE WHEN feed_cursor % 3 = 0 THEN 'root.a' ELSE '' END WHERE feed_cursor % 7 <> 0"
			if db.Dialector.Name() == "mysql" {
				old = "UPDATE events SET invocation_id = CONCAT('inv-', feed_cursor), author = 'user', branch = CASE WHEN feed_cursor % 3 = 0 THEN 'root.a' ELSE '' END WHERE feed_cursor % 7 <> 0"
			}
			if err := db.Exec(old).Error; err != nil {
				t.Fatal(err)
			}
			var before string
			if err := db.Raw("SELECT payload FROM events WHERE feed_cursor = 3").Scan(&before).Error; err != nil {
				t.Fatal(err)
			}

			// Replicas (of a server database: SQLite has one process) that
			// start together all open it, whichever moves what.
			replicas := 2
			if name == "sqlite" {
				replicas = 1
			}
			var wg sync.WaitGroup
			opened := make([]*session.SQLService, replicas)
			errs := make([]error, replicas)
			for i := range opened {
				wg.Go(func() { opened[i], errs[i] = session.NewSQLService(db) })
			}
			wg.Wait()
			for _, err := range errs {
				if err != nil {
					t.Fatalf("a replica opening the database with the other: %v", err)
				}
			}
			svc = opened[0]
			for _, id := range []string{"s1", "s2"} {
				resp, err := svc.Get(t.Context(), &session.GetRequest{AppName: "app", UserID: "u", SessionID: id})
				if err != nil {
					t.Fatal(err)
				}
				if got := resp.Session.Events().Len(); got != n/2 {
					t.Fatalf("%s has %d events after the move, want %d", id, got, n/2)
				}
				for ev := range resp.Session.Events().All() {
					c := ev.Cursor
					want := [3]string{fmt.Sprint("inv-", c), "user", ""}
					if c%3 == 0 {
						want[2] = "root.a"
					}
					if c%7 == 0 {
						want = [3]string{}
					}
					if got := [3]string{ev.InvocationID, ev.Author, ev.Branch}; got != want {
						t.Fatalf("event at cursor %d has invocation, author, branch %q, want %q", c, got, want)
					}
					if !strings.HasPrefix(ev.Message.Text(), "message ") || !strings.HasSuffix(ev.Message.Text(), " \u00e9\"\\") {
						t.Fatalf("event at cursor %d has text %q", c, ev.Message.Text())
					}
				}
			}
			var after string
			if err := db.Raw("SELECT payload FROM events WHERE feed_cursor = 3").Scan(&after).Error; err != nil {
				t.Fatal(err)
			}
			if want := `{"invocation_id":"inv-3","author":"user","branch":"root.a",` + before[1:]; after != want {
				t.Errorf("payload moved into\n%s\nwant\n%s", after, want)
			}
			for _, col := range []string{"invocation_id", "author", "branch"} {
				if db.Migrator().HasColumn("events", col) {
					t.Errorf("column %s is still there", col)
				}
			}
			newSQL(t, db) // and opens again
		})
	}
}

// TestTimeOrderIsRecordedForAnOldDatabase: a database from before sessions
// recorded their events' time order (and events had an index on their
// times) opens with each session's order found from its events, After
// finds what it did, and the two indexes appends no longer write are gone.
func TestTimeOrderIsRecordedForAnOldDatabase(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *gorm.DB{"sqlite": sqldbtest.SQLite, "postgres": sqldbtest.Postgres, "mysql": sqldbtest.MySQL} {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			svc := newSQL(t, db)
			base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			sessions := map[string][]int{"in-order": {1, 2, 2, 3}, "goes-back": {1, 3, 2, 4}, "empty": nil}
			for id, minutes := range sessions {
				if _, err := svc.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: id}); err != nil {
					t.Fatal(err)
				}
				for _, m := range minutes {
					ev := &session.Event{Timestamp: base.Add(time.Duration(m) * time.Minute), Message: session.NewTextMessage(session.RoleUser, fmt.Sprint(m))}
					if err := svc.AppendEvent(t.Context(), session.Ref("app", "u", id), ev); err != nil {
						t.Fatal(err)
					}
				}
			}
			svc.Close()
			// As an earlier version left it.
			for _, q := range []string{
				"ALTER TABLE sessions DROP COLUMN last_event_ns", "ALTER TABLE sessions DROP COLUMN events_in_order",
				"CREATE INDEX events_time ON events (app_name, user_id, session_id, timestamp_ns)",
				"CREATE INDEX sessions_by_update ON sessions (app_name, user_id, updated_ns, id)",
			} {
				if err := db.Exec(q).Error; err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}

			svc = newSQL(t, db)
			type times struct {
				LastEventNs   int64
				EventsInOrder bool
			}
			want := map[string]times{
				"in-order":  {base.Add(3 * time.Minute).UnixNano(), true},
				"goes-back": {base.Add(4 * time.Minute).UnixNano(), false},
				"empty":     {math.MinInt64, true},
			}
			for id, w := range want {
				var got times
				if err := db.Raw("SELECT last_event_ns, events_in_order FROM sessions WHERE id = ?", id).Scan(&got).Error; err != nil {
					t.Fatal(err)
				}
				if got != w {
					t.Errorf("%s: recorded %+v, want %+v", id, got, w)
				}
			}
			for id, after := range map[string]string{"in-order": "[2 2 3]", "goes-back": "[3 2 4]"} {
				resp, err := svc.Get(t.Context(), &session.GetRequest{AppName: "app", UserID: "u", SessionID: id, After: base.Add(90 * time.Second)})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for ev := range resp.Session.Events().All() {
					got = append(got, ev.Message.Text())
				}
				if fmt.Sprint(got) != after {
					t.Errorf("%s: after minute 1.5 got %v, want %s", id, got, after)
				}
			}
			for _, ix := range []struct{ table, name string }{{"events", "events_time"}, {"sessions", "sessions_by_update"}} {
				if db.Migrator().HasIndex(ix.table, ix.name) {
					t.Errorf("index %s is still there", ix.name)
				}
			}
			newSQL(t, db) // and opens again
		})
	}
}
