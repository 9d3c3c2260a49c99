package e5_test

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/hectormem/hector/pkg/embed/e5"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

// The index `hector serve` opens with no configuration: hybrid, e5-small-v2
// (in the binary: nothing to download) embedding in the background behind
// the keyword terms, kept in a file, following the sessions.
func ExampleNew_defaultIndex() {
	ctx := context.Background()
	sessions := session.NewInMemoryService() // session.NewSQLService(db) to keep them
	embedder, err := e5.New()
	if err != nil {
		panic(err)
	}
	idx, err := index.NewHybrid(embedder,
		index.WithFile(filepath.Join("data", "index", "hybrid.db")),
		index.WithSessions(sessions),
		index.WithBackgroundVectors(index.DefaultVectorLag))
	if err != nil {
		panic(err)
	}
	if err := idx.Start(ctx); err != nil { // opens the file, catches up on the feed
		panic(err)
	}
	defer idx.Close()
	s, _ := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "alice"})
	sessions.AppendEvent(ctx, s.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, "I adopted a puppy named Rex")})
	idx.Index(ctx, s.Session) // found by its words at once, by its meaning once embedded
	resp, _ := idx.Search(ctx, &index.SearchRequest{Query: "what pet do I have", AppName: "app", UserID: "alice"})
	for _, r := range resp.Results {
		fmt.Println(r.Content)
	}
}
