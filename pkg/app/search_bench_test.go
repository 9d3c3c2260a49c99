package app_test

import (
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

// What memory:search does for a user with facts, on the zero
// configuration (SQLite, the hybrid index with the sentence encoder): the
// index's search and the facts' search, each of which embeds the query.
//
//	go test -run '^$' -bench SearchWithFacts -count 6 ./pkg/app
func BenchmarkSearchWithFacts(b *testing.B) {
	cfg := config.Zero(config.Overrides{DataDir: b.TempDir()})
	cfg.Server.Index.Vectors = "inline"
	svcs, err := app.Open(b.Context(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		b.Fatal(err)
	}
	defer svcs.Close()
	resp, err := svcs.Sessions.Create(b.Context(), &session.CreateRequest{AppName: "app", UserID: "alice", SessionID: "s"})
	if err != nil {
		b.Fatal(err)
	}
	for i := range 20 {
		ev := &session.Event{Author: "alice", Message: session.NewTextMessage(session.RoleUser, fmt.Sprintf("message %d about trips and pets", i))}
		if err := svcs.Sessions.AppendEvent(b.Context(), resp.Session, ev); err != nil {
			b.Fatal(err)
		}
	}
	if err := svcs.Index.Index(b.Context(), resp.Session); err != nil {
		b.Fatal(err)
	}
	scope := facts.UserScope("app", "alice")
	if _, err := svcs.Facts.Store(b.Context(), scope, facts.StoreRequest{Key: "pet", Value: "Has a dog named Rex"}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		q := fmt.Sprintf("what pets do I have, question %d", i) // a new question each time
		if _, err := svcs.Index.Search(b.Context(), &index.SearchRequest{Query: q, AppName: "app", UserID: "alice"}); err != nil {
			b.Fatal(err)
		}
		if _, err := svcs.Facts.Search(b.Context(), scope, q, 5, time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
}
