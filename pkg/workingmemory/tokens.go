package workingmemory

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/pkoukk/tiktoken-go"
	tiktokenloader "github.com/pkoukk/tiktoken-go-loader"

	"github.com/hectormem/hector/pkg/session"
)

// Chat APIs wrap every message in a few tokens of their own, and prime the
// reply with a few more (OpenAI's published accounting).
const (
	tokensPerMessage = 3
	tokensPerReply   = 3
)

func init() {
	// The encodings ship inside the loader module: nothing is downloaded at run time.
	tiktoken.SetBpeLoader(tiktokenloader.NewOfflineLoader())
}

var encoders sync.Map // encoding name -> *tiktoken.Tiktoken, built once each

// EncodingForModel returns the token encoding a model uses: o200k_base for
// the gpt-4o, gpt-4.1, gpt-5 and o-series families, cl100k_base otherwise.
func EncodingForModel(model string) string {
	m := strings.ToLower(model)
	for _, p := range []string{"gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o"} {
		if strings.HasPrefix(m, p) {
			return "o200k_base"
		}
	}
	return "cl100k_base"
}

func encoder(name string) (*tiktoken.Tiktoken, error) {
	if e, ok := encoders.Load(name); ok {
		return e.(*tiktoken.Tiktoken), nil
	}
	e, err := tiktoken.GetEncoding(name)
	if err != nil {
		return nil, fmt.Errorf("workingmemory: token encoding %q: %w (use cl100k_base or o200k_base)", name, err)
	}
	actual, _ := encoders.LoadOrStore(name, e)
	return actual.(*tiktoken.Tiktoken), nil
}

// Counter counts the tokens events cost in a chat request. Counts are
// cached per event ID, so counting a long history again is cheap.
type Counter struct {
	enc   *tiktoken.Tiktoken
	mu    sync.Mutex
	cache map[eventKey]int
}

// eventKey identifies a stored event across sessions: IDs are only unique
// within a session, and callers may choose them.
type eventKey struct {
	id       string
	seq, tns int64
}

// maxCached bounds the cache; past it the cache starts over.
const maxCached = 200_000

// NewCounter returns a counter for an encoding ("cl100k_base", "o200k_base", …).
func NewCounter(encoding string) (*Counter, error) {
	e, err := encoder(encoding)
	if err != nil {
		return nil, err
	}
	return &Counter{enc: e, cache: map[eventKey]int{}}, nil
}

// Text counts the tokens of a string.
func (c *Counter) Text(s string) int {
	if s == "" {
		return 0
	}
	return len(c.enc.EncodeOrdinary(s)) // special-token text in user content is plain text
}

// Event counts what one event costs as a chat message: its role, text,
// tool names, arguments and results, and the per-message overhead.
func (c *Counter) Event(ev *session.Event) int {
	key := eventKey{ev.ID, ev.Seq, ev.Timestamp.UnixNano()}
	if ev.ID != "" {
		c.mu.Lock()
		n, ok := c.cache[key]
		c.mu.Unlock()
		if ok {
			return n
		}
	}
	n := tokensPerMessage
	if m := ev.Message; m != nil {
		n += c.Text(m.Role)
		for _, p := range m.Parts {
			switch {
			case p.Type == session.PartText:
				n += c.Text(p.Text)
			case p.ToolCall != nil:
				n += c.Text(p.ToolCall.Name) + c.Text(p.ToolCall.ID) + c.Text(jsonText(p.ToolCall.Arguments))
			case p.ToolResult != nil:
				n += c.Text(p.ToolResult.CallID) + c.Text(jsonText(p.ToolResult.Content))
			case p.Data != nil:
				n += c.Text(jsonText(p.Data))
			case p.File != nil:
				n += c.Text(p.File.Name) + c.Text(p.File.URI)
			}
		}
	}
	if ev.ID != "" {
		c.mu.Lock()
		if len(c.cache) >= maxCached {
			c.cache = map[eventKey]int{}
		}
		c.cache[key] = n
		c.mu.Unlock()
	}
	return n
}

func jsonText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(raw)
}
