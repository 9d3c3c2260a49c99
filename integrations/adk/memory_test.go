package hectoradk_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/adk/v2/memory"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/hectormem/hector/integrations/adk"
	"github.com/hectormem/hector/pkg/server/servertest"
)

func say(id, author, text string, at time.Time) *session.Event {
	role := genai.Role(genai.RoleModel)
	if author == "user" {
		role = genai.RoleUser
	}
	return &session.Event{ID: id, Author: author, InvocationID: "inv-" + id, Timestamp: at,
		LLMResponse: genaiText(text, role), Actions: session.EventActions{StateDelta: map[string]any{}}}
}

// search returns the entries found for query, by event ID.
func search(t *testing.T, m memory.Service, user, query string) map[string][]memory.Entry {
	t.Helper()
	resp, err := m.SearchMemory(t.Context(), &memory.SearchRequest{AppName: "notes", UserID: user, Query: query})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string][]memory.Entry{}
	for _, e := range resp.Memories {
		found[e.ID] = append(found[e.ID], e)
	}
	return found
}

// A session kept in ADK's own in-memory service becomes searchable, each
// event once however often it is added, with its author and time; a
// session grown since is added by what it gained; another user finds none
// of it.
func TestAddingASessionKeptElsewhere(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			ctx := t.Context()
			h := m.open(t)
			elsewhere := session.InMemoryService()
			created, err := elsewhere.Create(ctx, &session.CreateRequest{AppName: "notes", UserID: "ana", SessionID: "first"})
			if err != nil {
				t.Fatal(err)
			}
			at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
			for _, ev := range []*session.Event{
				say("e1", "user", "I adopted a puppy named Rex", at),
				say("e2", "helper", "Congratulations on Rex!", at.Add(time.Minute)),
			} {
				if err := elsewhere.AppendEvent(ctx, created.Session, ev); err != nil {
					t.Fatal(err)
				}
			}
			for range 2 {
				if err := h.Memory.AddSessionToMemory(ctx, created.Session); err != nil {
					t.Fatal(err)
				}
			}
			found := search(t, h.Memory, "ana", "puppy")
			if len(found["e1"]) != 1 {
				t.Fatalf("the turn added twice is found %d times, want once: %v", len(found["e1"]), found)
			}
			e := found["e1"][0]
			if e.Author != "user" || !e.Timestamp.Equal(at) || e.Content.Role != genai.RoleUser || e.Content.Parts[0].Text != "I adopted a puppy named Rex" {
				t.Errorf("entry = %+v, content %+v: want the user's words at %v", e, e.Content, at)
			}
			if e.CustomMetadata["session_id"] != "first" {
				t.Errorf("entry names session %v, want first", e.CustomMetadata["session_id"])
			}

			if err := elsewhere.AppendEvent(ctx, created.Session, say("e3", "user", "Rex chewed my slippers", at.Add(2*time.Minute))); err != nil {
				t.Fatal(err)
			}
			if err := h.Memory.AddSessionToMemory(ctx, created.Session); err != nil {
				t.Fatal(err)
			}
			if found := search(t, h.Memory, "ana", "Rex"); len(found["e1"]) != 1 || len(found["e2"]) != 1 || len(found["e3"]) != 1 || len(found) != 3 {
				t.Errorf("after the session grew, found %v: want e1, e2 and e3 once each", found)
			}
			got, err := h.Session.Get(ctx, &session.GetRequest{AppName: "notes", UserID: "ana", SessionID: "first"})
			if err != nil {
				t.Fatal(err)
			}
			if n := got.Session.Events().Len(); n != 3 {
				t.Errorf("Hector's copy holds %d events, want 3", n)
			}
			if found := search(t, h.Memory, "ben", "puppy Rex"); len(found) != 0 {
				t.Errorf("another user found %v", found)
			}
		})
	}
}

// countingTransport counts the requests it carries.
type countingTransport struct{ n atomic.Int64 }

func (c *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

// A session the Hector session service holds is in memory already: adding
// it costs not one request, and what it says is found as it is appended.
func TestAddingAHectorSessionDoesNothing(t *testing.T) {
	ctx := t.Context()
	hs := servertest.Start(t, configYAML(t.TempDir()))
	counter := &countingTransport{}
	h, err := hectoradk.Connect(hs.URL, "", hectoradk.WithHTTPClient(&http.Client{Transport: counter}))
	if err != nil {
		t.Fatal(err)
	}
	created, err := h.Session.Create(ctx, &session.CreateRequest{AppName: "notes", UserID: "ana"})
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Session.AppendEvent(ctx, created.Session, say("e1", "user", "My sister lives in Lisbon", time.Now())); err != nil {
		t.Fatal(err)
	}
	before := counter.n.Load()
	if err := h.Memory.AddSessionToMemory(ctx, created.Session); err != nil {
		t.Fatal(err)
	}
	if n := counter.n.Load() - before; n != 0 {
		t.Errorf("adding a session Hector holds made %d requests, want none", n)
	}
	if found := search(t, h.Memory, "ana", "Lisbon"); len(found["e1"]) != 1 {
		t.Errorf("found %v, want e1 once", found)
	}
}

// Over HTTP a user's key reaches that user's sessions and memory, never
// another's, whatever the request names.
func TestAnotherUsersKeyIsRefused(t *testing.T) {
	ctx := t.Context()
	hs := servertest.Start(t, configYAML(t.TempDir())+`  auth:
    api_keys:
      - {name: ana, key: ana-key-0123456789abcdef, role: user, app: notes, user: ana}
      - {name: ben, key: ben-key-0123456789abcdef, role: user, app: notes, user: ben}
`)
	ana, _ := hectoradk.Connect(hs.URL, "ana-key-0123456789abcdef")
	ben, _ := hectoradk.Connect(hs.URL, "ben-key-0123456789abcdef")
	created, err := ana.Session.Create(ctx, &session.CreateRequest{AppName: "notes", UserID: "ana", SessionID: "diary"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ana.Session.AppendEvent(ctx, created.Session, say("e1", "user", "My PIN is the year I was born", time.Now())); err != nil {
		t.Fatal(err)
	}
	_, refused := ben.Session.Get(ctx, &session.GetRequest{AppName: "notes", UserID: "ana", SessionID: "diary"})
	if refused == nil {
		t.Fatal("ben read ana's session")
	}
	if _, err := ben.Memory.SearchMemory(ctx, &memory.SearchRequest{AppName: "notes", UserID: "ana", Query: "PIN"}); err == nil {
		t.Error("ben searched ana's memory")
	}
	if err := ben.Session.AppendEvent(ctx, created.Session, say("e2", "user", "ben was here", time.Now())); err == nil {
		t.Error("ben appended to ana's session")
	}
	if _, err := ben.Session.List(ctx, &session.ListRequest{AppName: "notes"}); err == nil {
		t.Error("ben listed every user's sessions with a user key")
	}
	if got, err := ana.Session.Get(ctx, &session.GetRequest{AppName: "notes", UserID: "ana", SessionID: "diary"}); err != nil || got.Session.Events().Len() != 1 {
		t.Errorf("ana's session after ben's tries: %v, %v", got, err)
	}
	if msg := refused.Error(); containsAny(msg, "ben-key", "ana-key") {
		t.Errorf("the error shows a key: %s", msg)
	}
}

func TestConnectRefusesWhatIsNotAServersURL(t *testing.T) {
	for _, bad := range []string{"127.0.0.1:8080", "", "ftp://host", "http://", "http://host/?q=1"} {
		if _, err := hectoradk.Connect(bad, ""); err == nil {
			t.Errorf("Connect(%q) was taken", bad)
		}
	}
}
