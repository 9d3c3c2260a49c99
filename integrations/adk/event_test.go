package hectoradk_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/adk/v2/memory"
	"google.golang.org/adk/v2/model"
	"google.golang.org/adk/v2/session"
	"google.golang.org/genai"

	"github.com/hectormem/hector/integrations/adk"
	"github.com/hectormem/hector/pkg/server/servertest"
)

// Every kind of part and action ADK writes comes back as it was written,
// empty maps empty and absent ones nil, and a turn's words, not its
// thoughts or tool calls, are what memory finds.
func TestEventsComeBackAsWritten(t *testing.T) {
	at := time.Date(2026, 5, 4, 3, 2, 1, 123456000, time.UTC)
	written := []*session.Event{
		{ID: "call", Author: "assistant", InvocationID: "inv1", Branch: "assistant.lookup", Timestamp: at,
			LLMResponse: model.LLMResponse{Content: &genai.Content{Role: genai.RoleModel, Parts: []*genai.Part{
				{Text: "I should look at the calendar", Thought: true, ThoughtSignature: []byte{1, 2, 3}},
				{FunctionCall: &genai.FunctionCall{ID: "fc-1", Name: "calendar", Args: map[string]any{"day": "friday", "n": float64(2)}}},
			}}, UsageMetadata: &genai.GenerateContentResponseUsageMetadata{PromptTokenCount: 10, TotalTokenCount: 12}},
			Actions: session.EventActions{StateDelta: map[string]any{}, ArtifactDelta: map[string]int64{}}},
		{ID: "result", Author: "assistant", InvocationID: "inv1", Timestamp: at.Add(time.Second),
			LLMResponse: model.LLMResponse{Content: &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{
				{FunctionResponse: &genai.FunctionResponse{ID: "fc-1", Name: "calendar", Response: map[string]any{"events": []any{"dentist at nine"}}}},
			}}},
			Actions: session.EventActions{StateDelta: map[string]any{"user:last_tool": "calendar", "count": float64(3)}, ArtifactDelta: map[string]int64{"week.png": 2},
				TransferToAgent: "planner", Escalate: true, SkipSummarization: true}},
		{ID: "answer", Author: "assistant", InvocationID: "inv1", Timestamp: at.Add(2 * time.Second), LongRunningToolIDs: []string{"fc-9"},
			LLMResponse: model.LLMResponse{Content: genai.NewContentFromText("Friday starts with the dentist at nine.", genai.RoleModel),
				FinishReason: genai.FinishReasonStop, CustomMetadata: map[string]any{"trace": "abc"}}},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			ctx := t.Context()
			h := m.open(t)
			created, err := h.Session.Create(ctx, &session.CreateRequest{AppName: "notes", UserID: "ana", SessionID: "week"})
			if err != nil {
				t.Fatal(err)
			}
			for _, ev := range written {
				c := *ev
				if err := h.Session.AppendEvent(ctx, created.Session, &c); err != nil {
					t.Fatal(err)
				}
			}
			got, err := h.Session.Get(ctx, &session.GetRequest{AppName: "notes", UserID: "ana", SessionID: "week"})
			if err != nil {
				t.Fatal(err)
			}
			var read []*session.Event
			for ev := range got.Session.Events().All() {
				read = append(read, ev)
			}
			if diff := cmp.Diff(written, read, cmp.AllowUnexported(session.Event{})); diff != "" {
				t.Errorf("events read back differ (-written +read):\n%s", diff)
			}
			if v, _ := got.Session.State().Get("user:last_tool"); v != "calendar" {
				t.Errorf("user:last_tool = %v, want calendar", v)
			}
			found, err := h.Memory.SearchMemory(ctx, &memory.SearchRequest{AppName: "notes", UserID: "ana", Query: "dentist"})
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, e := range found.Memories {
				ids = append(ids, e.ID)
			}
			if len(ids) == 0 || ids[0] != "answer" {
				t.Errorf("memory found %v, want the answer first", ids)
			}
			if found, _ := h.Memory.SearchMemory(ctx, &memory.SearchRequest{AppName: "notes", UserID: "ana", Query: "calendar thought"}); len(found.Memories) != 0 {
				t.Errorf("a thought or a tool call was searchable: %+v", found.Memories)
			}
		})
	}
}

// A session another client of Hector wrote (curl, the Python client, a
// hosted agent) reads in ADK as text said by the user and by the model.
func TestEventsOtherClientsWroteRead(t *testing.T) {
	ctx := t.Context()
	hs := servertest.Start(t, configYAML(t.TempDir()))
	post := func(path, body string) {
		resp, err := http.Post(hs.URL+path, "application/json", bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s: %s", path, resp.Status)
		}
	}
	post("/v1/apps/notes/users/ana/sessions", `{"session_id": "chat"}`)
	post("/v1/apps/notes/users/ana/sessions/chat/events", `{"author": "ana", "message": {"role": "user", "parts": [{"type": "text", "text": "Book a table for two"}]}}`)
	post("/v1/apps/notes/users/ana/sessions/chat/events", `{"author": "bot", "message": {"role": "assistant", "parts": [{"type": "text", "text": "Done: eight o'clock."}]}}`)
	h, _ := hectoradk.Connect(hs.URL, "")
	got, err := h.Session.Get(ctx, &session.GetRequest{AppName: "notes", UserID: "ana", SessionID: "chat"})
	if err != nil {
		t.Fatal(err)
	}
	var said []string
	for ev := range got.Session.Events().All() {
		raw, _ := json.Marshal(ev.Content)
		said = append(said, ev.Author+" "+string(raw))
	}
	want := []string{
		`ana {"parts":[{"text":"Book a table for two"}],"role":"user"}`,
		`bot {"parts":[{"text":"Done: eight o'clock."}],"role":"model"}`,
	}
	if diff := cmp.Diff(want, said); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
