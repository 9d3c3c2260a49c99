package mcp

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Identify authenticates an HTTP request and says who it acts for. When it
// cannot, it writes the refusal itself and returns false.
type Identify func(w http.ResponseWriter, r *http.Request) (Identity, bool)

type identityKey struct{}

// HTTPHandler serves MCP over Streamable HTTP.
type HTTPHandler struct {
	http.Handler
	closing context.Context
	close   context.CancelFunc
}

// Close ends the streams open to clients: a client may keep one open for
// as long as it runs, and a server shutting down must not wait for that.
func (h *HTTPHandler) Close() { h.close() }

// Handler serves MCP over Streamable HTTP. Every request, not only the
// first of a session, goes through identify; an MCP session stays bound
// to the identity that opened it, so another credential cannot use it.
func Handler(svcs Services, identify Identify, logger *slog.Logger) *HTTPHandler {
	server := NewServer(svcs, fromToken)
	streamable := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return server },
		&sdk.StreamableHTTPOptions{Logger: logger, SessionTimeout: 30 * time.Minute})
	// The SDK binds a session to the user of its bearer-token hook and hands
	// that user to every call: identify's answer goes through it.
	bound := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		id := r.Context().Value(identityKey{}).(Identity)
		return &auth.TokenInfo{UserID: id.App + "\x00" + id.User, Expiration: time.Now().Add(time.Hour), Extra: map[string]any{"identity": id}}, nil
	}, nil)(streamable)
	h := &HTTPHandler{}
	h.closing, h.close = context.WithCancel(context.Background())
	h.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := identify(w, r)
		if !ok {
			return
		}
		ctx, cancel := context.WithCancel(context.WithValue(r.Context(), identityKey{}, id))
		defer cancel()
		defer context.AfterFunc(h.closing, cancel)()
		r = r.Clone(ctx)
		r.Header.Set("Authorization", "Bearer identified")
		bound.ServeHTTP(w, r)
	})
	return h
}

func fromToken(_ context.Context, extra *sdk.RequestExtra) (Identity, error) {
	if extra != nil && extra.TokenInfo != nil {
		if id, ok := extra.TokenInfo.Extra["identity"].(Identity); ok {
			return id, nil
		}
	}
	return Identity{}, errors.New("this request has no identity")
}
