// Package gateway is the Memory Gateway protocol: the wire types, and a
// client usable against any gateway, Hector's own included. A runtime
// searches the gateway before a run and adds the turn after it, then
// flushes so what was added becomes searchable.
package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// The search scopes.
const (
	ScopeCurrentChat   = "current_chat"
	ScopeResources     = "resources"
	ScopeAllUserMemory = "all_user_memory"
)

// Identity says whose memory a request is about; UserKey is that user's
// credential. AppID and ProjectID default to "default".
type Identity struct {
	UserID    string `json:"user_id"`
	UserKey   string `json:"user_key"`
	AppID     string `json:"app_id,omitempty"`
	ProjectID string `json:"project_id,omitempty"`
}

// SearchRequest is POST /memories/search.
type SearchRequest struct {
	Identity
	ConversationID string   `json:"conversation_id,omitempty"`
	Query          string   `json:"query"`
	Scope          []string `json:"scope"`
	TopK           int      `json:"top_k,omitempty"` // 1..100, default 8
}

// Result is one thing found.
type Result struct {
	ID          string  `json:"id"`
	SessionID   string  `json:"session_id,omitempty"`
	Text        string  `json:"text"`
	Score       float64 `json:"score"`
	SourceScope string  `json:"source_scope"`
	ResourceURI string  `json:"resource_uri,omitempty"`
}

// SearchResponse is the answer to a search.
type SearchResponse struct {
	Results []Result `json:"results"`
}

// Message is one message of a turn. Timestamp is Unix epoch milliseconds.
type Message struct {
	SenderID  string `json:"sender_id"`
	Role      string `json:"role"`
	Timestamp int64  `json:"timestamp"`
	Content   string `json:"content"`
}

// AddRequest is POST /memories/add. SessionID has the form chat:<id>.
type AddRequest struct {
	Identity
	SessionID string    `json:"session_id"`
	Messages  []Message `json:"messages"`
}

// FlushRequest is POST /memories/flush.
type FlushRequest struct {
	Identity
	SessionID string `json:"session_id"`
}

// Error is a failed call: which operation, which path, what status. It
// never carries the user key or the request body.
type Error struct {
	Op      string // search, add or flush
	Path    string
	Status  int    // 0 when no answer came
	Code    string // the gateway's error code, if it sent one
	Message string
}

func (e *Error) Error() string {
	if e.Status == 0 {
		return fmt.Sprintf("memory gateway %s %s: %s", e.Op, e.Path, e.Message)
	}
	return fmt.Sprintf("memory gateway %s %s: %d %s", e.Op, e.Path, e.Status, e.Message)
}

// Client calls one gateway.
type Client struct {
	BaseURL string
	Timeout time.Duration // per call, default 5s
	HTTP    *http.Client
}

// Search asks the gateway.
func (c *Client) Search(ctx context.Context, req SearchRequest) (*SearchResponse, error) {
	var out SearchResponse
	if err := c.call(ctx, "search", "/memories/search", req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Add stores a turn's messages. It is never retried: a lost answer must
// not store the turn twice.
func (c *Client) Add(ctx context.Context, req AddRequest) error {
	return c.call(ctx, "add", "/memories/add", req, nil)
}

// Flush makes what was added searchable.
func (c *Client) Flush(ctx context.Context, req FlushRequest) error {
	return c.call(ctx, "flush", "/memories/flush", req, nil)
}

func (c *Client) call(ctx context.Context, op, path string, body, out any) error {
	fail := func(status int, code, msg string) error {
		return &Error{Op: op, Path: path, Status: status, Code: code, Message: msg}
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return fail(0, "", "encoding the request failed")
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(c.BaseURL, "/")+path, bytes.NewReader(payload))
	if err != nil {
		return fail(0, "", "bad gateway URL")
	}
	req.Header.Set("Content-Type", "application/json")
	client := c.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		msg := "no answer"
		if errors.Is(err, context.DeadlineExceeded) {
			msg = "timed out"
		}
		return fail(0, "", msg) // the transport's error would quote the URL, not secrets, but says nothing more useful
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fail(resp.StatusCode, "", "reading the answer failed")
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct{ Code, Message string } `json:"error"`
		}
		json.Unmarshal(raw, &e)
		msg := e.Error.Message
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		return fail(resp.StatusCode, e.Error.Code, msg)
	}
	if out != nil {
		if err := json.Unmarshal(raw, out); err != nil {
			return fail(resp.StatusCode, "malformed", "the answer is not the protocol's JSON")
		}
	}
	return nil
}
