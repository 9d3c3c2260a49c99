package index

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/hectormem/hector/pkg/embed"
	"github.com/hectormem/hector/pkg/session"
)

// recordingEmbedder keeps every text it embeds.
type recordingEmbedder struct {
	embed.Embedder
	mu    sync.Mutex
	texts map[string]bool
}

func (r *recordingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	r.mu.Lock()
	for _, t := range texts {
		r.texts[t] = true
	}
	r.mu.Unlock()
	return r.Embedder.Embed(ctx, texts)
}

func (r *recordingEmbedder) embedded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.texts))
}

// turn is one event of turnsBefore's conversation.
type turn struct {
	session, author, role, text string
}

// turnsBefore is a conversation of two sessions written in turns, so the
// change feed interleaves them: a long question, a tool call (no text)
// and its answer, then short turns, past more than one page of the feed.
func turnsBefore() []turn {
	long := "I have been reading about " + strings.Repeat("old lighthouses and ", 12) + "which one should we visit?"
	turns := []turn{
		{"a", "Jon", session.RoleUser, long},
		{"b", "Gina", session.RoleUser, "what made you decide to run again?"},
		{"a", "Ann", session.RoleAssistant, "The one at Cape Point."},
		{"b", "Jon", session.RoleAssistant, ""}, // a tool call: no text
		{"b", "Jon", session.RoleAssistant, "After my last run I felt alive."},
	}
	for i := range 40 {
		turns = append(turns, turn{[]string{"a", "b"}[i%2], "Gina", session.RoleUser, fmt.Sprintf("turn %d about zeppelins", i)})
	}
	return turns
}

func appendTurns(t *testing.T, sessions session.Service, turns []turn, after func(session.Session)) {
	t.Helper()
	handles := map[string]session.Session{}
	for _, tu := range turns {
		s := handles[tu.session]
		if s == nil {
			s = newSession(t, sessions, tu.session)
			handles[tu.session] = s
		}
		ev := &session.Event{Author: tu.author, Message: session.NewTextMessage(tu.role, tu.text)}
		if tu.text == "" {
			ev.Message = &session.Message{Role: tu.role, Parts: []session.Part{{Type: session.PartToolCall, ToolCall: &session.ToolCall{ID: "c1", Name: "look"}}}}
		}
		if err := sessions.AppendEvent(t.Context(), s, ev); err != nil {
			t.Fatal(err)
		}
		if after != nil {
			after(s)
		}
	}
}

// wantEmbedded is what the turns' vectors are made of, written out from
// what befores promises: the last beforeWords words of the turn right
// before in the session when another author said it (none after a tool
// call), a line break, then the turn, each as "Author: text".
func wantEmbedded(turns []turn, preceded bool) []string {
	var want []string
	last, lastAuthor := map[string]string{}, map[string]string{}
	for _, tu := range turns {
		spoken := ""
		if tu.text != "" {
			spoken = tu.author + ": " + tu.text
			text := spoken
			if before := last[tu.session]; preceded && before != "" && lastAuthor[tu.session] != tu.author {
				words := strings.Fields(before)
				text = strings.Join(words[max(0, len(words)-beforeWords):], " ") + "\n" + spoken
			}
			want = append(want, text)
		}
		last[tu.session], lastAuthor[tu.session] = spoken, tu.author
	}
	slices.Sort(want)
	return want
}

// Every way a document gets its vector embeds the same text: the turn
// before it comes from the batch, the handle or the session service.
func TestEveryPathEmbedsATurnWithTheOneBefore(t *testing.T) {
	turns := turnsBefore()
	ctx := t.Context()
	for _, way := range []struct {
		name string
		run  func(t *testing.T, e embed.Embedder)
	}{
		{"no session service, each append", func(t *testing.T, e embed.Embedder) {
			idx, err := NewHybrid(e)
			if err != nil {
				t.Fatal(err)
			}
			appendTurns(t, session.NewInMemoryService(), turns, func(s session.Session) {
				if err := idx.Index(ctx, s); err != nil {
					t.Fatal(err)
				}
			})
		}},
		{"following the feed, each append", func(t *testing.T, e embed.Embedder) {
			sessions := session.NewInMemoryService()
			idx, err := NewHybrid(e, WithSessions(sessions))
			if err != nil {
				t.Fatal(err)
			}
			if err := idx.Start(ctx); err != nil {
				t.Fatal(err)
			}
			defer idx.Close()
			appendTurns(t, sessions, turns, func(s session.Session) {
				if err := idx.Index(ctx, s); err != nil {
					t.Fatal(err)
				}
			})
		}},
		{"vectors in the background, each append", func(t *testing.T, e embed.Embedder) {
			sessions := session.NewInMemoryService()
			idx := openBackground(t, sessions, e, 100, discardLogs)
			defer idx.Close()
			appendTurns(t, sessions, turns, func(s session.Session) {
				if err := idx.Index(ctx, s); err != nil {
					t.Fatal(err)
				}
			})
			if err := idx.AwaitVectors(ctx); err != nil {
				t.Fatal(err)
			}
		}},
		{"catching up on the feed in pages", func(t *testing.T, e embed.Embedder) {
			sessions := session.NewInMemoryService()
			appendTurns(t, sessions, turns, nil)
			idx := openBackground(t, sessions, e, 100, discardLogs)
			defer idx.Close()
			if err := idx.AwaitVectors(ctx); err != nil {
				t.Fatal(err)
			}
		}},
		{"rebuilt", func(t *testing.T, e embed.Embedder) {
			sessions := session.NewInMemoryService()
			appendTurns(t, sessions, turns, nil)
			idx, err := NewHybrid(e)
			if err != nil {
				t.Fatal(err)
			}
			if err := idx.Rebuild(ctx, sessions, "app", "u"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(way.name, func(t *testing.T) {
			e := &recordingEmbedder{Embedder: hashEmbedderOf(t), texts: map[string]bool{}}
			way.run(t, e)
			if got, want := e.embedded(), wantEmbedded(turns, true); !slices.Equal(got, want) {
				t.Errorf("embedded:\n%q\nwant:\n%q", got, want)
			}
		})
	}
}

// A vector index embeds each turn alone: with no words to tell a reply
// from the question before it, the reply would be found for the question.
func TestAVectorIndexEmbedsATurnAlone(t *testing.T) {
	turns := turnsBefore()
	e := &recordingEmbedder{Embedder: hashEmbedderOf(t), texts: map[string]bool{}}
	sessions := session.NewInMemoryService()
	idx, err := NewVector(e, WithSessions(sessions))
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer idx.Close()
	appendTurns(t, sessions, turns, func(s session.Session) {
		if err := idx.Index(t.Context(), s); err != nil {
			t.Fatal(err)
		}
	})
	if got, want := e.embedded(), wantEmbedded(turns, false); !slices.Equal(got, want) {
		t.Errorf("embedded:\n%q\nwant:\n%q", got, want)
	}
}

func hashEmbedderOf(t *testing.T) embed.Embedder {
	e, err := embed.NewHash(64)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
