package erase_test

import (
	"reflect"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/hectormem/hector/pkg/erase"
	"github.com/hectormem/hector/pkg/sqldb/sqldbtest"
	"github.com/hectormem/hector/pkg/userdata"
)

// A receipt is kept as it was made, per user, the latest replacing the
// one before; in memory and in each SQL database.
func TestReceiptsAreKept(t *testing.T) {
	stores := map[string]func(t *testing.T) erase.Receipts{"memory": func(*testing.T) erase.Receipts { return erase.NewInMemoryReceipts() }}
	for name, open := range map[string]func(testing.TB) *gorm.DB{"sqlite": sqldbtest.SQLite, "postgres": sqldbtest.Postgres, "mysql": sqldbtest.MySQL} {
		stores[name] = func(t *testing.T) erase.Receipts {
			r, err := erase.NewSQLReceipts(open(t))
			if err != nil {
				t.Fatal(err)
			}
			return r
		}
	}
	for name, newStore := range stores {
		t.Run(name, func(t *testing.T) {
			if name == "postgres" {
				sqldbtest.Postgres(t)
			}
			if name == "mysql" {
				sqldbtest.MySQL(t)
			}
			store := newStore(t)
			at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
			first := &erase.Receipt{AppName: "app", UserID: "alice", By: "admin", State: erase.StateRunning, Started: at,
				Stores: []erase.Count{{Store: userdata.Sessions, Removed: 2}}, Verified: true}
			if err := store.Put(t.Context(), first); err != nil {
				t.Fatal(err)
			}
			if got, err := store.Latest(t.Context(), "app", "alice"); err != nil || !reflect.DeepEqual(got, first) {
				t.Errorf("Latest = %+v, %v; want %+v", got, err, first)
			}
			if running, err := store.Running(t.Context()); err != nil || len(running) != 1 || !reflect.DeepEqual(running[0], first) {
				t.Errorf("Running = %+v, %v; want the first", running, err)
			}
			second := *first
			second.State, second.Finished, second.Stores = erase.StateDone, at.Add(time.Second), []erase.Count{{Store: userdata.Sessions}}
			store.Put(t.Context(), &second)
			if got, _ := store.Latest(t.Context(), "app", "alice"); !reflect.DeepEqual(got, &second) {
				t.Errorf("after it finished: %+v", got)
			}
			if running, _ := store.Running(t.Context()); len(running) != 0 {
				t.Errorf("Running after it finished = %+v", running)
			}
			if got, err := store.Latest(t.Context(), "app", "bob"); err != nil || got != nil {
				t.Errorf("bob's receipt = %+v, %v; want none", got, err)
			}
		})
	}
}
