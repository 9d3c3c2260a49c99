package session_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/sqldb"
)

// A session in SQLite: create it, append a turn that also sets a user:
// key, and read the last events back.
func ExampleNewSQLService() {
	dir, _ := os.MkdirTemp("", "hector-example")
	defer os.RemoveAll(dir)
	db, err := sqldb.OpenSQLite(filepath.Join(dir, "hector.db"))
	if err != nil {
		panic(err)
	}
	defer sqldb.Close(db)
	sessions, err := session.NewSQLService(db)
	if err != nil {
		panic(err)
	}
	defer sessions.Close()
	ctx := context.Background()
	created, err := sessions.Create(ctx, &session.CreateRequest{AppName: "travel", UserID: "alice", SessionID: "trip"})
	if err != nil {
		panic(err)
	}
	err = sessions.AppendEvent(ctx, created.Session, &session.Event{
		Author:  "user",
		Message: session.NewTextMessage(session.RoleUser, "I am planning a trip to Lisbon"),
		Actions: session.Actions{StateDelta: map[string]any{"user:city": "Lisbon"}},
	})
	if err != nil {
		panic(err)
	}
	got, err := sessions.Get(ctx, &session.GetRequest{AppName: "travel", UserID: "alice", SessionID: "trip", NumRecentEvents: 10})
	if err != nil {
		panic(err)
	}
	for ev := range got.Session.Events().All() {
		fmt.Println(ev.Seq, ev.Author, ev.Message.Text())
	}
	city, _ := got.Session.State().Get("user:city")
	fmt.Println("user:city =", city)
	// Output:
	// 1 user I am planning a trip to Lisbon
	// user:city = Lisbon
}
