package index_test

import (
	"context"
	"testing"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

// A user erased while a full rebuild runs, after the rebuild read their
// sessions, is not in what the rebuild makes: their tombstones are gone
// with them, so only forgetting them again after it can take them out.
func TestForgetDuringARebuild(t *testing.T) {
	ctx := t.Context()
	sessions := session.NewInMemoryService()
	idx, err := index.NewKeyword(index.WithSessions(sessions))
	if err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	for _, user := range []string{"erin", "frank"} {
		resp, err := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: user, SessionID: user + "-s"})
		if err != nil {
			t.Fatal(err)
		}
		if err := sessions.AppendEvent(ctx, resp.Session, &session.Event{Author: user, Message: session.NewTextMessage(session.RoleUser, user+" keeps bees")}); err != nil {
			t.Fatal(err)
		}
	}
	if err := idx.CatchUp(ctx, sessions); err != nil {
		t.Fatal(err)
	}
	erased := false
	during := index.WithRebuildProgress(ctx, func(p index.Progress) {
		if erased || p.Done {
			return
		}
		erased = true // as erase.User does, between two pages of the rebuild's reading
		if err := sessions.Delete(context.Background(), &session.DeleteRequest{AppName: "app", UserID: "erin", SessionID: "erin-s"}); err != nil {
			t.Error(err)
		}
		sessions.(session.TombstoneEraser).EraseTombstones(context.Background(), "app", "erin")
		if _, err := idx.Forget(context.Background(), "app", "erin"); err != nil {
			t.Error(err)
		}
	})
	if err := idx.Rebuild(during, sessions, "", ""); err != nil {
		t.Fatal(err)
	}
	if !erased {
		t.Fatal("the rebuild reported no progress to erase during")
	}
	if found, _ := idx.Search(ctx, &index.SearchRequest{Query: "bees", AppName: "app", UserID: "erin"}); len(found.Results) != 0 {
		t.Errorf("erin, erased during the rebuild, is found after it: %+v", found.Results)
	}
	if found, _ := idx.Search(ctx, &index.SearchRequest{Query: "bees", AppName: "app", UserID: "frank"}); len(found.Results) != 1 {
		t.Errorf("frank after the rebuild: %+v", found.Results)
	}
}
