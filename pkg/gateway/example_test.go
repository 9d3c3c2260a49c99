package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/hectormem/hector/pkg/gateway"
)

// Searching a Memory Gateway (here a stand-in that answers one result).
func ExampleClient_Search() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(gateway.SearchResponse{Results: []gateway.Result{{ID: "m1", Text: "prefers window seats", Score: 0.9, SourceScope: gateway.ScopeAllUserMemory}}})
	}))
	defer srv.Close()
	client := &gateway.Client{BaseURL: srv.URL}
	resp, err := client.Search(context.Background(), gateway.SearchRequest{
		Identity: gateway.Identity{UserID: "alice", UserKey: "the-key-for-alice"},
		Query:    "seat preference",
		Scope:    []string{gateway.ScopeAllUserMemory},
	})
	if err != nil {
		panic(err)
	}
	for _, r := range resp.Results {
		fmt.Println(r.SourceScope, r.Text)
	}
	// Output:
	// all_user_memory prefers window seats
}
