package index_test

import (
	"context"
	"fmt"

	"github.com/hectormem/hector/pkg/embed"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

// A hybrid index over a user's past conversations, searched for that user
// only.
func ExampleNewHybrid() {
	ctx := context.Background()
	sessions := session.NewInMemoryService()
	embedder, _ := embed.NewHash(256) // offline and lexical; use NewOpenAI or NewOllama for meaning
	idx, err := index.NewHybrid(embedder, index.WithStemming(true), index.WithSessions(sessions))
	if err != nil {
		panic(err)
	}
	for user, text := range map[string]string{"alice": "We deploy with Konflux on Fridays", "bob": "Bob deploys by hand"} {
		s, _ := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: user})
		sessions.AppendEvent(ctx, s.Session, &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, text)})
		if err := idx.Index(ctx, s.Session); err != nil {
			panic(err)
		}
	}
	resp, err := idx.Search(ctx, &index.SearchRequest{Query: "how do we deploy", AppName: "app", UserID: "alice", Limit: 3})
	if err != nil {
		panic(err)
	}
	for _, r := range resp.Results {
		fmt.Println(r.Author, r.Content)
	}
	// Output:
	// user We deploy with Konflux on Fridays
}
