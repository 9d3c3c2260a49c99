package session

import (
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
)

// Upgrading replicas: one fills the sessions' time order from their events
// while another, started after the columns came, already appends. A row
// that append moved keeps what the append wrote; the fill, reading an
// older snapshot, could otherwise undo an append's "no longer in order".
func TestTimeOrderFillLeavesRowsAppendsMoved(t *testing.T) {
	for name, open := range map[string]func(testing.TB) *gorm.DB{"sqlite": sqldbtest.SQLite, "postgres": sqldbtest.Postgres, "mysql": sqldbtest.MySQL} {
		t.Run(name, func(t *testing.T) {
			db := open(t)
			svc, err := NewSQLService(db)
			if err != nil {
				t.Fatal(err)
			}
			defer svc.Close()
			base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
			for _, id := range []string{"moved", "untouched"} {
				if _, err := svc.Create(t.Context(), &CreateRequest{AppName: "app", UserID: "u", SessionID: id}); err != nil {
					t.Fatal(err)
				}
				for _, m := range []int{1, 2} {
					ev := &Event{Timestamp: base.Add(time.Duration(m) * time.Minute), Message: NewTextMessage(RoleUser, "x")}
					if err := svc.AppendEvent(t.Context(), Ref("app", "u", id), ev); err != nil {
						t.Fatal(err)
					}
				}
			}
			// As the columns are the moment they are added: their defaults.
			if err := db.Exec("UPDATE sessions SET last_event_ns = 0, events_in_order = ?", false).Error; err != nil {
				t.Fatal(err)
			}
			// The other replica appends an event older than the newest.
			back := base.Add(90 * time.Second)
			if err := svc.AppendEvent(t.Context(), Ref("app", "u", "moved"), &Event{Timestamp: back, Message: NewTextMessage(RoleUser, "x")}); err != nil {
				t.Fatal(err)
			}
			if err := recordTimeOrder(db, false); err != nil {
				t.Fatal(err)
			}
			for id, want := range map[string]sessionRow{
				"moved":     {LastEventNs: back.UnixNano(), EventsInOrder: false}, // as the append left it
				"untouched": {LastEventNs: base.Add(2 * time.Minute).UnixNano(), EventsInOrder: true},
			} {
				var got sessionRow
				if err := db.Raw("SELECT last_event_ns, events_in_order FROM sessions WHERE id = ?", id).Scan(&got).Error; err != nil {
					t.Fatal(err)
				}
				if got.LastEventNs != want.LastEventNs || got.EventsInOrder != want.EventsInOrder {
					t.Errorf("%s: last event %d, in order %v; want %d, %v", id, got.LastEventNs, got.EventsInOrder, want.LastEventNs, want.EventsInOrder)
				}
			}
		})
	}
}
