package index_test

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"sort"
	"testing"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

type retrievalData struct {
	Sessions map[string][]string `json:"sessions"`
	Queries  []struct {
		Q        string   `json:"q"`
		Relevant []string `json:"relevant"`
	} `json:"queries"`
}

// TestRetrievalQuality measures recall@5 and MRR on testdata/retrieval.json
// for each index type, and holds each to a floor so a regression fails.
// go test -run TestRetrievalQuality -v ./pkg/index prints the figures.
func TestRetrievalQuality(t *testing.T) {
	raw, err := os.ReadFile("testdata/retrieval.json")
	if err != nil {
		t.Fatal(err)
	}
	var data retrievalData
	if err := json.Unmarshal(raw, &data); err != nil {
		t.Fatal(err)
	}
	sessions := session.NewInMemoryService()
	eventIDs := map[string]string{} // event ID -> "session/index"
	names := make([]string, 0, len(data.Sessions))
	for name := range data.Sessions {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		resp, err := sessions.Create(t.Context(), &session.CreateRequest{AppName: "app", UserID: "u", SessionID: name})
		if err != nil {
			t.Fatal(err)
		}
		for i, text := range data.Sessions[name] {
			ev := &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, text)}
			if err := sessions.AppendEvent(t.Context(), resp.Session, ev); err != nil {
				t.Fatal(err)
			}
			eventIDs[ev.ID] = fmt.Sprintf("%s/%d", name, i)
			reply := &session.Event{Author: "agent", Message: session.NewTextMessage(session.RoleAssistant, "Got it, I'll keep that in mind.")}
			if err := sessions.AppendEvent(t.Context(), resp.Session, reply); err != nil {
				t.Fatal(err)
			}
		}
	}
	keyword, _ := index.NewKeyword(index.WithStemming(true))
	vector, _ := index.NewVector(hashEmbedder(t, 0))
	hybrid, _ := index.NewHybrid(hashEmbedder(t, 0), index.WithStemming(true))
	for _, tc := range []struct {
		idx              *index.Index
		minRecall, minRR float64
	}{{keyword, 0.9, 0.9}, {vector, 0.85, 0.85}, {hybrid, 0.9, 0.9}} {
		if err := tc.idx.Rebuild(t.Context(), sessions, "", ""); err != nil {
			t.Fatal(err)
		}
		var recall, rr float64
		for _, q := range data.Queries {
			resp, err := tc.idx.Search(t.Context(), &index.SearchRequest{Query: q.Q, AppName: "app", UserID: "u", Limit: 5})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range resp.Results {
				got = append(got, eventIDs[r.EventID])
			}
			found, first := 0, 0
			for rank, id := range got {
				if slices.Contains(q.Relevant, id) {
					found++
					if first == 0 {
						first = rank + 1
					}
				}
			}
			recall += float64(found) / float64(len(q.Relevant))
			if first > 0 {
				rr += 1 / float64(first)
			}
		}
		n := float64(len(data.Queries))
		recall, rr = recall/n, rr/n
		t.Logf("%-8s recall@5 %.3f  MRR %.3f  (%d queries)", tc.idx.Name(), recall, rr, len(data.Queries))
		if recall < tc.minRecall || rr < tc.minRR {
			t.Errorf("%s: recall@5 %.3f, MRR %.3f; below the floor of %.2f, %.2f", tc.idx.Name(), recall, rr, tc.minRecall, tc.minRR)
		}
	}
}
