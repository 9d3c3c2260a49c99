package artifacts

import (
	"bytes"
	"context"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/hectormem/hector/pkg/state"
)

type memKey struct {
	owner
	name string
}

type memVersion struct {
	info Info
	data []byte
}

type memoryStore struct {
	options
	mu       sync.RWMutex
	versions map[memKey][]memVersion
}

// NewInMemoryService returns a Service that keeps artifacts in memory, for tests
// and short-lived agents.
func NewInMemoryService(opts ...Option) Service {
	return &memoryStore{options: newOptions(opts), versions: make(map[memKey][]memVersion)}
}

func (m *memoryStore) Save(ctx context.Context, req *SaveRequest) (*Info, error) {
	o, meta, c, err := m.upload(req)
	if err != nil {
		return nil, err
	}
	data, err := io.ReadAll(c)
	if err != nil {
		return nil, err
	}
	metadata, _ := decodeMetadata(meta) // a private copy
	key := memKey{o, req.Name}

	m.mu.Lock()
	defer m.mu.Unlock()
	info := Info{Name: req.Name, Version: int64(len(m.versions[key]) + 1), MimeType: c.mimeType, Size: c.size,
		SHA256: c.digest(), CreatedAt: req.createdAt(), Metadata: metadata}
	m.versions[key] = append(m.versions[key], memVersion{info: info, data: data})
	return copyInfo(info), nil
}

func (m *memoryStore) Open(ctx context.Context, ref Ref, version int64) (*Info, io.ReadCloser, error) {
	o, err := resolve(ref)
	if err != nil {
		return nil, nil, err
	}
	if version < 0 {
		return nil, nil, invalid("version %d is negative", version)
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	vs := m.versions[memKey{o, ref.Name}]
	if version == 0 {
		version = int64(len(vs))
	}
	if version == 0 || version > int64(len(vs)) {
		return nil, nil, notFound(ref, version)
	}
	v := vs[version-1]
	return copyInfo(v.info), io.NopCloser(bytes.NewReader(v.data)), nil
}

func (m *memoryStore) List(ctx context.Context, appName, userID, sessionID string) ([]*Info, error) {
	if err := validateView(appName, userID, sessionID); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []*Info
	for k, vs := range m.versions {
		if k.app == appName && k.user == userID && (k.session == sessionID || k.session == "") {
			out = append(out, copyInfo(vs[len(vs)-1].info))
		}
	}
	slices.SortFunc(out, func(a, b *Info) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

func (m *memoryStore) Versions(ctx context.Context, ref Ref) ([]*Info, error) {
	o, err := resolve(ref)
	if err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	vs := m.versions[memKey{o, ref.Name}]
	if len(vs) == 0 {
		return nil, notFound(ref, 0)
	}
	out := make([]*Info, len(vs))
	for i, v := range vs {
		out[i] = copyInfo(v.info)
	}
	return out, nil
}

func (m *memoryStore) Delete(ctx context.Context, ref Ref) error {
	o, err := resolve(ref)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	key := memKey{o, ref.Name}
	if len(m.versions[key]) == 0 {
		return notFound(ref, 0)
	}
	delete(m.versions, key)
	return nil
}

func (m *memoryStore) DeleteSession(ctx context.Context, appName, userID, sessionID string) error {
	if err := validateSession(appName, userID, sessionID); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	maps.DeleteFunc(m.versions, func(k memKey, _ []memVersion) bool {
		return k.owner == owner{appName, userID, sessionID}
	})
	return nil
}

func (m *memoryStore) Sessions(ctx context.Context, appName, userID string) ([]string, error) {
	if err := validateView(appName, userID, ""); err != nil {
		return nil, err
	}
	m.mu.RLock()
	defer m.mu.RUnlock()
	var out []string
	for k := range m.versions {
		if k.app == appName && k.user == userID && k.session != "" && !slices.Contains(out, k.session) {
			out = append(out, k.session)
		}
	}
	slices.Sort(out)
	return out, nil
}

// copyInfo returns a copy whose metadata the caller may change freely.
func copyInfo(i Info) *Info {
	i.Metadata = state.CloneMap(i.Metadata) // decoded from JSON, so only JSON types to copy
	return &i
}
