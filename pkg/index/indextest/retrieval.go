package indextest

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"testing"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

// retrievalJSON holds sessions and queries with the events relevant to each.
//
//go:embed testdata/retrieval.json
var retrievalJSON []byte

// Quality is how well an index retrieves: the mean recall of the relevant
// events in the top 5, and the mean reciprocal rank of the first one.
type Quality struct{ Recall5, MRR float64 }

func (q Quality) String() string { return fmt.Sprintf("recall@5 %.3f  MRR %.3f", q.Recall5, q.MRR) }

// Retrieval rebuilds idx from the retrieval corpus and measures it.
func Retrieval(t testing.TB, idx index.Service) Quality {
	t.Helper()
	var data struct {
		Sessions map[string][]string `json:"sessions"`
		Queries  []struct {
			Q        string   `json:"q"`
			Relevant []string `json:"relevant"`
		} `json:"queries"`
	}
	if err := json.Unmarshal(retrievalJSON, &data); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	sessions := session.NewInMemoryService()
	eventIDs := map[string]string{} // event ID -> "session/index"
	names := make([]string, 0, len(data.Sessions))
	for name := range data.Sessions {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		resp, err := sessions.Create(ctx, &session.CreateRequest{AppName: "app", UserID: "u", SessionID: name})
		if err != nil {
			t.Fatal(err)
		}
		for i, text := range data.Sessions[name] {
			ev := &session.Event{Author: "user", Message: session.NewTextMessage(session.RoleUser, text)}
			if err := sessions.AppendEvent(ctx, resp.Session, ev); err != nil {
				t.Fatal(err)
			}
			eventIDs[ev.ID] = fmt.Sprintf("%s/%d", name, i)
			reply := &session.Event{Author: "agent", Message: session.NewTextMessage(session.RoleAssistant, "Got it, I'll keep that in mind.")}
			if err := sessions.AppendEvent(ctx, resp.Session, reply); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := idx.Rebuild(ctx, sessions, "", ""); err != nil {
		t.Fatal(err)
	}
	var q Quality
	for _, query := range data.Queries {
		resp, err := idx.Search(ctx, &index.SearchRequest{Query: query.Q, AppName: "app", UserID: "u", Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		found, first := 0, 0
		for rank, r := range resp.Results {
			if slices.Contains(query.Relevant, eventIDs[r.EventID]) {
				found++
				if first == 0 {
					first = rank + 1
				}
			}
		}
		q.Recall5 += float64(found) / float64(len(query.Relevant))
		if first > 0 {
			q.MRR += 1 / float64(first)
		}
	}
	n := float64(len(data.Queries))
	q.Recall5, q.MRR = q.Recall5/n, q.MRR/n
	return q
}
