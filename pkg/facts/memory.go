package facts

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

type memoryStorage struct {
	mu     sync.Mutex
	facts  map[string]map[string]record // scope -> key -> record
	sealed []byte
}

func newMemoryStorage() *memoryStorage { return &memoryStorage{facts: map[string]map[string]record{}} }

func (m *memoryStorage) put(ctx context.Context, r record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	scope := m.facts[r.Scope.String()]
	if scope == nil {
		scope = map[string]record{}
		m.facts[r.Scope.String()] = scope
	}
	if old, ok := scope[r.Key]; ok && old.ExpiresAt.After(r.UpdatedAt) {
		r.CreatedAt = old.CreatedAt
	}
	r.Tags = slices.Clone(r.Tags)
	scope[r.Key] = r
	return nil
}

func (m *memoryStorage) get(ctx context.Context, s Scope, key string, now time.Time) (*record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.facts[s.String()][key]
	if !ok || !r.ExpiresAt.After(now) {
		return nil, nil
	}
	return &r, nil
}

func (m *memoryStorage) list(ctx context.Context, s Scope, prefix, category string, now time.Time) ([]record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []record
	for _, r := range m.facts[s.String()] {
		if r.ExpiresAt.After(now) && strings.HasPrefix(r.Key, prefix) && (category == "" || r.Category == category) {
			out = append(out, r)
		}
	}
	sortNewestFirst(out)
	return out, nil
}

func sortNewestFirst(rs []record) {
	slices.SortFunc(rs, func(a, b record) int {
		if c := b.UpdatedAt.Compare(a.UpdatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
}

func (m *memoryStorage) remove(ctx context.Context, s Scope, key, category string, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, r := range m.facts[s.String()] {
		if (key == "" || k == key) && (category == "" || r.Category == category) {
			if r.ExpiresAt.After(now) {
				n++
			}
			delete(m.facts[s.String()], k)
		}
	}
	return n, nil
}

func (m *memoryStorage) usedChars(ctx context.Context, s Scope, exceptKey string, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, r := range m.facts[s.String()] {
		if k != exceptKey && r.ExpiresAt.After(now) {
			n += r.ValueChars
		}
	}
	return n, nil
}

func (m *memoryStorage) sweep(ctx context.Context, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, scope := range m.facts {
		for k, r := range scope {
			if !r.ExpiresAt.After(now) {
				delete(scope, k)
				n++
			}
		}
	}
	return n, nil
}

func (m *memoryStorage) canary(ctx context.Context) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sealed, nil
}

func (m *memoryStorage) setCanary(ctx context.Context, sealed []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sealed = sealed
	return nil
}
