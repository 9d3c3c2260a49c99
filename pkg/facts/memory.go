package facts

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"sync"
	"time"
)

// memoryStorage keeps every version of each key, oldest first: the last
// one is current unless it has ended.
type memoryStorage struct {
	mu     sync.Mutex
	facts  map[string]map[string][]record // scope -> key -> versions
	sealed []byte
}

func newMemoryStorage() *memoryStorage {
	return &memoryStorage{facts: map[string]map[string][]record{}}
}

// currentOf returns the key's current version, live or not; callers hold mu.
func (m *memoryStorage) currentOf(s Scope, key string) *record {
	vs := m.facts[s.String()][key]
	if len(vs) == 0 || !vs[len(vs)-1].current() {
		return nil
	}
	return &vs[len(vs)-1]
}

func (m *memoryStorage) get(ctx context.Context, s Scope, key string, now time.Time) (*record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.currentOf(s, key)
	if r == nil || !r.ExpiresAt.After(now) {
		return nil, nil
	}
	out := clone(*r)
	return &out, nil
}

func clone(r record) record {
	r.Tags = slices.Clone(r.Tags)
	r.Source.EventIDs = slices.Clone(r.Source.EventIDs)
	return r
}

func (m *memoryStorage) replace(ctx context.Context, prev *record, next record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	keys := m.facts[next.Scope.String()]
	if keys == nil {
		keys = map[string][]record{}
		m.facts[next.Scope.String()] = keys
	}
	vs := keys[next.Key]
	cur := m.currentOf(next.Scope, next.Key)
	switch {
	case prev != nil && (cur == nil || cur.ID != prev.ID):
		return errMoved
	case prev == nil && cur != nil && cur.ExpiresAt.After(next.ValidFrom):
		return errMoved
	case prev == nil && cur != nil: // expired: gone
		vs = vs[:len(vs)-1]
	case prev != nil:
		cur.ValidTo, cur.SupersededBy = next.ValidFrom, next.ID
	}
	lengthen(vs, next.ExpiresAt)
	keys[next.Key] = append(vs, clone(next))
	return nil
}

// stillCurrent returns prev's key's current version if it is prev, for a
// change to make to it; callers hold mu.
func (m *memoryStorage) stillCurrent(prev record) (*record, error) {
	cur := m.currentOf(prev.Scope, prev.Key)
	if cur == nil || cur.ID != prev.ID {
		return nil, errMoved
	}
	return cur, nil
}

func (m *memoryStorage) end(ctx context.Context, prev record, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, err := m.stillCurrent(prev)
	if err != nil {
		return err
	}
	cur.ValidTo = at
	return nil
}

func (m *memoryStorage) extend(ctx context.Context, prev record, expires time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, err := m.stillCurrent(prev)
	if err != nil {
		return err
	}
	lengthen(m.facts[prev.Scope.String()][prev.Key], expires)
	cur.ExpiresAt = expires
	return nil
}

// lengthen keeps a key's history as long as its newest version: a past
// version expires no earlier than expires.
func lengthen(vs []record, expires time.Time) {
	for i := range vs {
		if vs[i].ExpiresAt.Before(expires) {
			vs[i].ExpiresAt = expires
		}
	}
}

func (m *memoryStorage) versions(ctx context.Context, s Scope, key string) ([]record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []record
	for _, r := range m.facts[s.String()][key] {
		out = append(out, clone(r))
	}
	return out, nil
}

func (m *memoryStorage) list(ctx context.Context, s Scope, prefix, category string, now time.Time) ([]record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []record
	for key := range m.facts[s.String()] {
		if r := m.currentOf(s, key); r != nil && r.ExpiresAt.After(now) && matches(r, prefix, category) {
			out = append(out, clone(*r))
		}
	}
	sortNewestFirst(out)
	return out, nil
}

func (m *memoryStorage) listAt(ctx context.Context, s Scope, prefix, category string, t time.Time) ([]record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []record
	for _, vs := range m.facts[s.String()] {
		for _, r := range vs {
			if r.validAt(t) && matches(&r, prefix, category) {
				out = append(out, clone(r))
			}
		}
	}
	sortNewestFirst(out)
	return out, nil
}

func matches(r *record, prefix, category string) bool {
	return strings.HasPrefix(r.Key, prefix) && (category == "" || r.Category == category)
}

func sortNewestFirst(rs []record) {
	slices.SortFunc(rs, func(a, b record) int {
		if c := b.ValidFrom.Compare(a.ValidFrom); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
}

// remove deletes whole keys: every version of each key whose newest
// version matches.
func (m *memoryStorage) remove(ctx context.Context, s Scope, key, category string, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	keys := m.facts[s.String()]
	for k, vs := range keys {
		newest := vs[len(vs)-1]
		if key != "" && k != key || category != "" && newest.Category != category {
			continue
		}
		if newest.current() && newest.ExpiresAt.After(now) {
			n++
		}
		delete(keys, k)
	}
	return n, nil
}

func (m *memoryStorage) similar(ctx context.Context, s Scope, contentSig, entitySig string, now time.Time) ([]record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []record
	for key := range m.facts[s.String()] {
		r := m.currentOf(s, key)
		if r != nil && r.ExpiresAt.After(now) && (r.ContentSig == contentSig || entitySig != "" && r.EntitySig == entitySig) {
			out = append(out, clone(*r))
		}
	}
	return out, nil
}

func (m *memoryStorage) unsigned(ctx context.Context) ([]record, error) { return nil, nil } // it starts empty

func (m *memoryStorage) sign(ctx context.Context, r record) error { return nil }

func (m *memoryStorage) removeUser(ctx context.Context, app, user string) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for scope, keys := range m.facts {
		for k, vs := range keys {
			if ownedBy(vs[0].Scope, app, user) {
				n += len(vs)
				delete(keys, k)
			}
		}
		if len(keys) == 0 {
			delete(m.facts, scope)
		}
	}
	return n, nil
}

// ownedBy reports whether a scope is a user's: theirs or one of their
// sessions' (an app's scope is every user's).
func ownedBy(s Scope, app, user string) bool {
	return s.App == app && s.User == user && s.Kind != ScopeApp
}

func (m *memoryStorage) restore(ctx context.Context, recs []record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	recs = slices.Clone(recs)
	slices.SortStableFunc(recs, byScopeKeyTime) // a key's current version last
	for _, r := range recs {
		keys := m.facts[r.Scope.String()]
		if keys == nil {
			keys = map[string][]record{}
			m.facts[r.Scope.String()] = keys
		}
		keys[r.Key] = append(keys[r.Key], clone(r))
	}
	return nil
}

func (m *memoryStorage) taken(ctx context.Context, ids []string) (bool, error) {
	asked := make(map[string]bool, len(ids))
	for _, id := range ids {
		asked[id] = true
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, keys := range m.facts {
		for _, vs := range keys {
			for _, r := range vs {
				if asked[r.ID] {
					return true, nil
				}
			}
		}
	}
	return false, nil
}

func (m *memoryStorage) userVersions(ctx context.Context, app, user string) ([]record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []record
	for _, keys := range m.facts {
		for _, vs := range keys {
			if ownedBy(vs[0].Scope, app, user) {
				for _, r := range vs {
					out = append(out, clone(r))
				}
			}
		}
	}
	slices.SortStableFunc(out, byScopeKeyTime)
	return out, nil
}

func (m *memoryStorage) owners(ctx context.Context, app string, after Owner, limit int) ([]Owner, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	counts := map[Owner]int{}
	for _, keys := range m.facts {
		for _, vs := range keys {
			s := vs[0].Scope
			o := Owner{App: s.App, User: s.User}
			if s.Kind == ScopeApp || (app != "" && s.App != app) || compareOwners(o, after) <= 0 {
				continue
			}
			n := counts[o] // a user with only past facts is listed with 0
			if vs[len(vs)-1].current() {
				n++
			}
			counts[o] = n
		}
	}
	out := make([]Owner, 0, len(counts))
	for o, n := range counts {
		o.Facts = n
		out = append(out, o)
	}
	slices.SortFunc(out, compareOwners)
	return out[:min(len(out), limit)], nil
}

// byScopeKeyTime orders versions by scope, key, then validity: of two
// that began at once, the one that ended first.
func byScopeKeyTime(a, b record) int {
	rank := func(r record) int {
		if r.current() {
			return 1
		}
		return 0
	}
	return cmp.Or(strings.Compare(a.Scope.String(), b.Scope.String()), strings.Compare(a.Key, b.Key), a.ValidFrom.Compare(b.ValidFrom),
		cmp.Compare(rank(a), rank(b)))
}

func (m *memoryStorage) usedChars(ctx context.Context, s Scope, exceptKey string, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k := range m.facts[s.String()] {
		if r := m.currentOf(s, k); r != nil && k != exceptKey && r.ExpiresAt.After(now) {
			n += r.ValueChars
		}
	}
	return n, nil
}

func (m *memoryStorage) sweep(ctx context.Context, now time.Time) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, keys := range m.facts {
		for k, vs := range keys {
			kept := slices.DeleteFunc(vs, func(r record) bool { return !r.ExpiresAt.After(now) })
			n += len(vs) - len(kept)
			if len(kept) == 0 {
				delete(keys, k)
			} else {
				keys[k] = kept
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
