package hectorclient_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	hectorclient "github.com/hectormem/hector/clients/go"
	"github.com/hectormem/hector/pkg/server/servertest"
)

func ptr[T any](v T) *T { return &v }

// The generated client drives a real server: create, append, search, facts.
func TestGeneratedClient(t *testing.T) {
	const key = "client-test-key-0123456789"
	hs := servertest.Start(t, fmt.Sprintf(`
server:
  data_dir: %s
  auth:
    api_keys:
      - {name: alice, key: %s, role: user, app: travel, user: alice}
`, t.TempDir(), key))

	c, err := hectorclient.NewClientWithResponses(hs.URL, hectorclient.WithRequestEditorFn(func(ctx context.Context, r *http.Request) error {
		r.Header.Set("Authorization", "Bearer "+key)
		return nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	created, err := c.CreateSessionWithResponse(ctx, "travel", "alice", hectorclient.CreateSession{SessionId: ptr("trip")})
	if err != nil || created.JSON201 == nil || *created.JSON201.Id != "trip" {
		t.Fatalf("createSession: %v %s", err, created.Body)
	}
	appended, err := c.AppendEventWithResponse(ctx, "travel", "alice", "trip", hectorclient.AppendEvent{Author: ptr("user"),
		Message: &hectorclient.Message{Role: "user", Parts: []map[string]interface{}{{"type": "text", "text": "I am planning a trip to Lisbon"}}}})
	if err != nil || appended.JSON201 == nil || *appended.JSON201.Seq != 1 {
		t.Fatalf("appendEvent: %v %s", err, appended.Body)
	}
	found, err := c.SearchMemoryWithResponse(ctx, "travel", "alice", hectorclient.SearchRequest{Query: "Lisbon trip"})
	if err != nil || found.JSON200 == nil || len(*found.JSON200.Results) != 1 || *(*found.JSON200.Results)[0].SessionId != "trip" {
		t.Fatalf("searchMemory: %v %s", err, found.Body)
	}
	stored, err := c.StoreFactWithResponse(ctx, "travel", "alice", hectorclient.StoreFact{Key: "home", Value: "Porto"})
	if err != nil || stored.JSON201 == nil {
		t.Fatalf("storeFact: %v %s", err, stored.Body)
	}
	refused, err := c.StoreFactWithResponse(ctx, "travel", "alice", hectorclient.StoreFact{Key: "k", Value: "v", Category: ptr("system")})
	if err != nil || refused.JSON400 == nil || refused.JSON400.Error.Code != "category_reserved" {
		t.Fatalf("a refused fact: %v %s", err, refused.Body)
	}
	listed, err := c.ListFactsWithResponse(ctx, "travel", "alice", nil)
	if err != nil || listed.JSON200 == nil || len(*listed.JSON200.Facts) != 1 || *(*listed.JSON200.Facts)[0].Value != "Porto" {
		t.Fatalf("listFacts: %v %s", err, listed.Body)
	}
	forbidden, err := c.ListFactsWithResponse(ctx, "travel", "bob", nil)
	if err != nil || forbidden.JSON403 == nil {
		t.Fatalf("another user's facts: %v %d %s", err, forbidden.StatusCode(), forbidden.Body)
	}
}
