package state

import (
	"iter"
	"maps"
	"slices"
	"sync"
)

// Map is a State held in memory, safe for concurrent use. Session handles
// use it for their merged view. Values are normalized on Set and cloned on
// Get, so nobody outside can reach the stored values.
type Map struct {
	mu            sync.RWMutex
	values        map[string]any
	maxValueBytes int
}

// NewMap returns a Map holding a deep copy of values. maxValueBytes bounds
// each value set later (<= 0 means DefaultMaxValueBytes).
func NewMap(values map[string]any, maxValueBytes int) *Map {
	m := CloneMap(values)
	if m == nil {
		m = make(map[string]any)
	}
	return &Map{values: m, maxValueBytes: maxValueBytes}
}

// Get returns a copy of the value of key, or ErrStateKeyNotExist.
func (m *Map) Get(key string) (any, error) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	v, ok := m.values[key]
	if !ok {
		return nil, ErrStateKeyNotExist
	}
	return Clone(v), nil
}

// Set validates and stores a value. Setting nil deletes the key.
func (m *Map) Set(key string, value any) error {
	if _, err := ScopeOf(key); err != nil {
		return err
	}
	v, err := Normalize(key, value, m.maxValueBytes)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	Apply(m.values, map[string]any{key: v})
	return nil
}

// Delete removes key.
func (m *Map) Delete(key string) error {
	if _, err := ScopeOf(key); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.values, key)
	return nil
}

// All yields a snapshot of the keys and values, in key order.
func (m *Map) All() iter.Seq2[string, any] {
	m.mu.RLock()
	snapshot := CloneMap(m.values)
	m.mu.RUnlock()
	return func(yield func(string, any) bool) {
		for _, k := range slices.Sorted(maps.Keys(snapshot)) {
			if !yield(k, snapshot[k]) {
				return
			}
		}
	}
}

// ApplyDelta applies an already validated, normalized delta.
func (m *Map) ApplyDelta(delta map[string]any) {
	m.mu.Lock()
	defer m.mu.Unlock()
	Apply(m.values, CloneMap(delta))
}

// DeleteScope removes every key of one scope; used to drop temp: keys when an invocation ends.
func (m *Map) DeleteScope(s Scope) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.values {
		if scope, _ := ScopeOf(k); scope == s {
			delete(m.values, k)
		}
	}
}

// Snapshot returns a deep copy of every key and value.
func (m *Map) Snapshot() map[string]any {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return CloneMap(m.values)
}
