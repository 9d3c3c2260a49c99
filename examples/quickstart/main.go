// Quickstart: Hector's session service on the embedded SQLite default.
// Each run starts a new conversation; the user: state carries over.
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/sqldb"
)

func main() {
	ctx := context.Background()
	dataDir := os.Getenv("HECTOR_DATA_DIR")
	if dataDir == "" {
		dataDir = "data"
	}
	db, err := sqldb.OpenSQLite(filepath.Join(dataDir, "hector.db"))
	if err != nil {
		log.Fatal(err)
	}
	sessions, err := session.NewSQLService(db)
	if err != nil {
		log.Fatal(err)
	}
	defer sessions.Close()

	created, err := sessions.Create(ctx, &session.CreateRequest{AppName: "quickstart", UserID: "alice"})
	if err != nil {
		log.Fatal(err)
	}
	s := created.Session
	visits, _ := s.State().Get("user:visits") // shared by all of alice's sessions
	n, _ := visits.(float64)

	err = sessions.AppendEvent(ctx, s, &session.Event{
		Author:  "user",
		Message: session.NewTextMessage(session.RoleUser, "Hello! I prefer metric units."),
		Actions: session.Actions{StateDelta: map[string]any{
			"user:units":  "metric",
			"user:visits": n + 1,
		}},
	})
	if err != nil {
		log.Fatal(err)
	}

	got, err := sessions.Get(ctx, &session.GetRequest{AppName: "quickstart", UserID: "alice", SessionID: s.ID()})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("session %s has %d event(s)\n", got.Session.ID(), got.Session.Events().Len())
	for ev := range got.Session.Events().All() {
		fmt.Printf("  #%d %s: %s\n", ev.Seq, ev.Author, ev.Message.Text())
	}
	units, _ := got.Session.State().Get("user:units")
	visits, _ = got.Session.State().Get("user:visits")
	fmt.Printf("user:units = %v, user:visits = %v (data in %s)\n", units, visits, dataDir)
}
