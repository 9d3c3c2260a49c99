package embed

import (
	"container/list"
	"context"
	"slices"
	"sync"
)

// Memo returns e remembering the vectors of the size texts it embedded
// last. A search embeds its query once for the index and once more for
// the user's facts; with the sentence encoder each costs milliseconds, so
// the second is served from here. Every call gets vectors of its own.
func Memo(e Embedder, size int) Embedder {
	return &memo{Embedder: e, size: max(size, 1), byText: map[string]*list.Element{}, lru: list.New()}
}

type memo struct {
	Embedder
	size int

	mu     sync.Mutex
	byText map[string]*list.Element // of *memoEntry
	lru    *list.List               // most recently used first
}

type memoEntry struct {
	text string
	vec  []float32
}

func (m *memo) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	return m.embed(ctx, texts, "", m.Embedder.Embed)
}

// EmbedQueries remembers queries apart from texts: an asymmetric model
// embeds the same words differently as one and as the other.
func (m *memo) EmbedQueries(ctx context.Context, queries []string) ([][]float32, error) {
	return m.embed(ctx, queries, "query\x00", func(ctx context.Context, q []string) ([][]float32, error) {
		return Queries(ctx, m.Embedder, q)
	})
}

// embed serves texts from memory under key+text, and embeds the others with fn.
func (m *memo) embed(ctx context.Context, texts []string, key string, fn func(context.Context, []string) ([][]float32, error)) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var todo []string
	var at []int
	m.mu.Lock()
	for i, t := range texts {
		if el, ok := m.byText[key+t]; ok {
			m.lru.MoveToFront(el)
			out[i] = slices.Clone(el.Value.(*memoEntry).vec)
		} else {
			todo, at = append(todo, t), append(at, i)
		}
	}
	m.mu.Unlock()
	if len(todo) == 0 {
		return out, nil
	}
	vecs, err := fn(ctx, todo)
	if err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for j, i := range at {
		out[i] = vecs[j]
		if _, ok := m.byText[key+todo[j]]; ok {
			continue // embedded meanwhile by another call
		}
		m.byText[key+todo[j]] = m.lru.PushFront(&memoEntry{key + todo[j], slices.Clone(vecs[j])})
		if m.lru.Len() > m.size {
			oldest := m.lru.Back()
			delete(m.byText, oldest.Value.(*memoEntry).text)
			m.lru.Remove(oldest)
		}
	}
	return out, nil
}

func (m *memo) SimilarityFloor() float64 { return SimilarityFloor(m.Embedder) }
func (m *memo) VectorWeight() float64    { return VectorWeight(m.Embedder) }
