// Package workingmemory decides which events an LLM sees on each call:
// everything (all), the last N messages (buffer_window), the newest events
// that fit a token budget (token_window), or a running summary plus the
// recent events (summary_buffer). Every strategy keeps tool calls and their
// results together: providers reject a result whose call was cut off, and
// a call left without its result.
package workingmemory

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/hectormem/hector/pkg/session"
)

// Strategy trims what the LLM sees.
type Strategy interface {
	Name() string
	// FilterEvents returns, before each LLM call, the events to send: an
	// in-order subsequence of events (events are never changed; an event
	// that must lose a dangling tool call or result is copied).
	FilterEvents(events []*session.Event) []*session.Event
	// CheckAndSummarize returns, after each turn, a summary event to append,
	// or nil when there is nothing to do.
	CheckAndSummarize(ctx context.Context, events []*session.Event) (*session.Event, error)
}

// Config is a working_memory block of an agent's YAML:
//
//	working_memory: {type: all}
//	working_memory: {type: buffer_window, max_messages: 20}
//	working_memory: {type: token_window, max_tokens: 4000}
//	working_memory: {type: summary_buffer, max_messages: 50, summary_threshold: 30}
type Config struct {
	// Type: all, buffer_window, token_window or summary_buffer.
	Type string `yaml:"type" json:"type"`
	// MaxMessages is what buffer_window keeps, and what summary_buffer
	// keeps before summarizing (defaults 20 and 50).
	MaxMessages int `yaml:"max_messages,omitempty" json:"max_messages,omitempty"`
	// MaxTokens is token_window's budget (default 4,000).
	MaxTokens int `yaml:"max_tokens,omitempty" json:"max_tokens,omitempty"`
	// SummaryThreshold is how many events make summary_buffer summarize
	// (default 30).
	SummaryThreshold int `yaml:"summary_threshold,omitempty" json:"summary_threshold,omitempty"`
	// KeepRecent is how many of the newest events a summary leaves out
	// (default: half of summary_threshold).
	KeepRecent int `yaml:"keep_recent,omitempty" json:"keep_recent,omitempty"`
	// Model picks the token encoding (see EncodingForModel); Encoding overrides it.
	Model string `yaml:"model,omitempty" json:"model,omitempty"`
	// Encoding is a tiktoken encoding: cl100k_base, o200k_base, ….
	Encoding string `yaml:"encoding,omitempty" json:"encoding,omitempty"`
}

// Defaults for keys left out.
const (
	DefaultMaxMessages      = 20
	DefaultMaxTokens        = 4000
	DefaultSummaryMessages  = 50
	DefaultSummaryThreshold = 30
)

// Option configures New.
type Option func(*deps)

type deps struct {
	summarizer Summarizer
	logger     *slog.Logger
}

// WithSummarizer sets summary_buffer's summarizer (default: NewExtractive(0)).
func WithSummarizer(s Summarizer) Option { return func(d *deps) { d.summarizer = s } }

// WithLogger sets where strategies log (default slog.Default()).
func WithLogger(l *slog.Logger) Option { return func(d *deps) { d.logger = l } }

// FieldError is a mistake in a Config: which key (max_tokens) and what is
// wrong with it.
type FieldError struct {
	Key, Msg string
	Err      error // the cause, when there is one
}

func (e *FieldError) Error() string { return "working_memory." + e.Key + ": " + e.Msg }
func (e *FieldError) Unwrap() error { return e.Err }

func fieldError(key, format string, args ...any) *FieldError {
	return &FieldError{Key: key, Msg: fmt.Sprintf(format, args...)}
}

// New builds the strategy cfg describes. Unknown types, negative numbers and
// keys that do not apply to the type are *FieldErrors naming the key.
func New(cfg Config, opts ...Option) (Strategy, error) {
	d := deps{logger: slog.Default()}
	for _, o := range opts {
		o(&d)
	}
	for key, v := range map[string]int{"max_messages": cfg.MaxMessages, "max_tokens": cfg.MaxTokens, "summary_threshold": cfg.SummaryThreshold, "keep_recent": cfg.KeepRecent} {
		if v < 0 {
			return nil, fieldError(key, "must be a positive number, got %d", v)
		}
	}
	onlyFor := func(types map[string][]string) error {
		given := map[string]bool{"max_messages": cfg.MaxMessages != 0, "max_tokens": cfg.MaxTokens != 0,
			"summary_threshold": cfg.SummaryThreshold != 0, "keep_recent": cfg.KeepRecent != 0}
		for key, set := range given {
			if set && !contains(types[key], cfg.Type) {
				return fieldError(key, "does not apply to type %q", cfg.Type)
			}
		}
		return nil
	}
	if err := onlyFor(map[string][]string{
		"max_messages": {"buffer_window", "summary_buffer"}, "max_tokens": {"token_window"},
		"summary_threshold": {"summary_buffer"}, "keep_recent": {"summary_buffer"},
	}); err != nil {
		return nil, err
	}
	switch cfg.Type {
	case "all":
		return allStrategy{}, nil
	case "buffer_window":
		return &bufferWindow{max: or(cfg.MaxMessages, DefaultMaxMessages), logger: d.logger}, nil
	case "token_window":
		enc := cfg.Encoding
		if enc == "" {
			enc = EncodingForModel(cfg.Model)
		}
		counter, err := NewCounter(enc)
		if err != nil {
			return nil, &FieldError{Key: "encoding", Msg: err.Error(), Err: err}
		}
		return &tokenWindow{max: or(cfg.MaxTokens, DefaultMaxTokens), counter: counter, logger: d.logger}, nil
	case "summary_buffer":
		return newSummaryBuffer(cfg, d)
	case "":
		return nil, fieldError("type", "missing: use all, buffer_window, token_window or summary_buffer")
	default:
		return nil, fieldError("type", "unknown type %q: use all, buffer_window, token_window or summary_buffer", cfg.Type)
	}
}

func or(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// allStrategy shows everything; it only removes dangling tool calls and results.
type allStrategy struct{}

func (allStrategy) Name() string { return "all" }
func (allStrategy) FilterEvents(events []*session.Event) []*session.Event {
	return sanitize(events)
}
func (allStrategy) CheckAndSummarize(context.Context, []*session.Event) (*session.Event, error) {
	return nil, nil
}

// bufferWindow keeps the newest max messages, pinned events included.
type bufferWindow struct {
	max    int
	logger *slog.Logger
}

func (*bufferWindow) Name() string { return "buffer_window" }

func (b *bufferWindow) FilterEvents(events []*session.Event) []*session.Event {
	return windowByCount(newHistory(events), b.max, b.logger)
}

func windowByCount(h history, max int, logger *slog.Logger) []*session.Event {
	pinned := 0
	for _, p := range h.pinned {
		if p {
			pinned++
		}
	}
	cand := len(h.events) - pinned
	kept, over := h.window(cand - (max - pinned))
	if over {
		logger.Warn("working memory: the smallest window that keeps tool calls with their results exceeds max_messages; keeping it",
			"max_messages", max, "kept", len(kept))
	}
	return kept
}

func (*bufferWindow) CheckAndSummarize(context.Context, []*session.Event) (*session.Event, error) {
	return nil, nil
}

// tokenWindow keeps the newest events that fit max tokens, pinned events included.
type tokenWindow struct {
	max     int
	counter *Counter
	logger  *slog.Logger
}

func (*tokenWindow) Name() string { return "token_window" }

func (t *tokenWindow) FilterEvents(events []*session.Event) []*session.Event {
	h := newHistory(events)
	used := tokensPerReply
	for i, ev := range h.events {
		if h.pinned[i] {
			used += t.counter.Event(ev)
		}
	}
	cand := h.candidates()
	start := len(cand)
	for start > 0 {
		n := t.counter.Event(h.events[cand[start-1]])
		if used+n > t.max {
			break
		}
		used += n
		start--
	}
	kept, over := h.window(start)
	if over {
		t.logger.Warn("working memory: the smallest window that keeps tool calls with their results exceeds max_tokens; keeping it",
			"max_tokens", t.max, "tokens", t.Tokens(kept))
	}
	return kept
}

// Tokens counts what events cost as a chat request.
func (t *tokenWindow) Tokens(events []*session.Event) int {
	n := tokensPerReply
	for _, ev := range events {
		n += t.counter.Event(ev)
	}
	return n
}

func (*tokenWindow) CheckAndSummarize(context.Context, []*session.Event) (*session.Event, error) {
	return nil, nil
}
