package embed

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
)

// counting counts the texts its embedder is asked for.
type counting struct {
	Embedder
	texts atomic.Int64
}

func (c *counting) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.texts.Add(int64(len(texts)))
	return c.Embedder.Embed(ctx, texts)
}

// A text embedded again is served from memory, with the same vector, a
// copy of its own; the memory keeps the size texts used last.
func TestMemo(t *testing.T) {
	h, err := NewHash(16)
	if err != nil {
		t.Fatal(err)
	}
	c := &counting{Embedder: h}
	m := Memo(c, 2)
	first, err := m.Embed(t.Context(), []string{"a dog", "a cat"})
	if err != nil {
		t.Fatal(err)
	}
	again, _ := m.Embed(t.Context(), []string{"a cat", "a bird", "a dog"})
	if n := c.texts.Load(); n != 3 {
		t.Errorf("the embedder was asked for %d texts, want 3 (a dog, a cat, a bird)", n)
	}
	if !slices.Equal(again[0], first[1]) || !slices.Equal(again[2], first[0]) {
		t.Error("a remembered vector differs from the one first made")
	}
	again[2][0] = 42 // the caller's own copy
	if dog, _ := m.Embed(t.Context(), []string{"a dog"}); dog[0][0] == 42 {
		t.Error("changing a returned vector changed the memory")
	}

	// Least recently used goes first: with room for two, A B A C keeps A and C.
	c2 := &counting{Embedder: h}
	lru := Memo(c2, 2)
	for _, text := range []string{"A", "B", "A", "C", "A"} {
		lru.Embed(t.Context(), []string{text})
	}
	if n := c2.texts.Load(); n != 3 {
		t.Errorf("A B A C A embedded %d texts, want 3", n)
	}
	lru.Embed(t.Context(), []string{"B"})
	if n := c2.texts.Load(); n != 4 {
		t.Errorf("B, dropped for C, was not embedded again (%d texts)", n)
	}

	var wg sync.WaitGroup
	for i := range 8 { // the race detector watches
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.Embed(context.Background(), []string{"a fish", string(rune('a' + i))})
		}()
	}
	wg.Wait()
}
