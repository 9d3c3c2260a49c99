package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/hectormem/hector/internal/hashid"
	"sync"
	"time"

	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/tool"
)

// maxCachedResults bounds a ToolCache: when full, expired entries go first,
// then any.
const maxCachedResults = 10_000

// ToolCache keeps tools' results for a while, in process: a read-through
// cache in front of tools that opt into it (CacheTool).
type ToolCache struct {
	mu      sync.Mutex
	entries map[string]cachedResult
	now     func() time.Time
}

type cachedResult struct {
	value   json.RawMessage
	expires time.Time
	// users are those whose calls made or read the entry: its arguments
	// may carry what one of them said, so erasing any of them drops it.
	users map[[2]string]bool
}

// NewToolCache returns an empty cache; now is the clock (time.Now when nil).
func NewToolCache(now func() time.Time) *ToolCache {
	if now == nil {
		now = time.Now
	}
	return &ToolCache{entries: map[string]cachedResult{}, now: now}
}

// CacheTool returns t with its results cached for ttl. The key is the
// SHA-256 of the invocation's app, the tool's name and its arguments in
// canonical JSON: the tools that opt in come from servers every user of an
// agent shares, which never learn who the user is, so a result is the same
// for every user of the app and one user's call may serve another's. Errors
// are never cached, nor a result that looks like it carries a credential.
func (c *ToolCache) CacheTool(t tool.Tool, ttl time.Duration) (tool.Tool, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("tool %s: a cache needs a positive ttl (an entry never lives forever)", t.Name())
	}
	return &cachedTool{Tool: t, ttl: ttl, cache: c}, nil
}

type cachedTool struct {
	tool.Tool
	ttl   time.Duration
	cache *ToolCache
}

type hitsKey struct{}

// withCacheHits makes the cached tools called with ctx count their hits in *n.
func withCacheHits(ctx context.Context, n *int) context.Context {
	return context.WithValue(ctx, hitsKey{}, n)
}

func (t *cachedTool) Call(ctx context.Context, inv tool.Invocation, args json.RawMessage) (any, error) {
	key, err := t.key(inv, args)
	if err != nil {
		return nil, err
	}
	if v, ok := t.cache.get(key, inv); ok {
		if n, _ := ctx.Value(hitsKey{}).(*int); n != nil {
			*n++
		}
		var out any
		return out, json.Unmarshal(v, &out)
	}
	out, err := t.Tool.Call(ctx, inv, args)
	if err != nil {
		return nil, err
	}
	if raw, merr := json.Marshal(out); merr == nil && !facts.LooksLikeSecret(string(raw)) {
		t.cache.put(key, raw, t.ttl, inv)
	}
	return out, nil
}

func (t *cachedTool) key(inv tool.Invocation, args json.RawMessage) (string, error) {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return "", errors.New("the arguments are not JSON")
	}
	canonical, _ := json.Marshal(v) // maps marshal with sorted keys
	return hashid.Hex(inv.AppName, t.Name(), string(canonical)), nil
}

func (c *ToolCache) get(key string, inv tool.Invocation) (json.RawMessage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !c.now().Before(e.expires) {
		delete(c.entries, key)
		return nil, false
	}
	e.users[[2]string{inv.AppName, inv.UserID}] = true
	return e.value, true
}

// Name names the cache in erasure receipts.
func (c *ToolCache) Name() string { return "tool_cache" }

// ForgetUser drops the entries a user's calls made or read, and says how
// many: erasing a person.
func (c *ToolCache) ForgetUser(app, user string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for k, e := range c.entries {
		if e.users[[2]string{app, user}] {
			delete(c.entries, k)
			n++
		}
	}
	return n
}

func (c *ToolCache) put(key string, value json.RawMessage, ttl time.Duration, inv tool.Invocation) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.entries) >= maxCachedResults {
		for k, e := range c.entries { // expired ones first, else any
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		for k := range c.entries {
			if len(c.entries) < maxCachedResults {
				break
			}
			delete(c.entries, k)
		}
	}
	c.entries[key] = cachedResult{value: value, expires: now.Add(ttl), users: map[[2]string]bool{{inv.AppName, inv.UserID}: true}}
}
