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

// Handler serves MCP over Streamable HTTP, statelessly: every request
// goes through identify and stands alone, so that any replica behind a
// load balancer can answer any request, and there is no session another
// credential could take over. (Hector's tools never call back into the
// client, which is all a stateful session would add.)
//
// A credential that may erase users is served erase_user besides; one that
// may not never sees it.
func Handler(svcs Services, identify Identify, logger *slog.Logger) http.Handler {
	withErase := NewServer(svcs, fromToken)
	svcs.Erase = nil
	server := NewServer(svcs, fromToken)
	streamable := sdk.NewStreamableHTTPHandler(func(r *http.Request) *sdk.Server {
		if id, _ := r.Context().Value(identityKey{}).(Identity); id.MayErase {
			return withErase
		}
		return server
	}, &sdk.StreamableHTTPOptions{Stateless: true, Logger: logger})
	// The SDK hands each call the user of its bearer-token hook: identify's
	// answer goes through it.
	withIdentity := auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		id := r.Context().Value(identityKey{}).(Identity)
		return &auth.TokenInfo{UserID: id.App + "\x00" + id.User, Expiration: time.Now().Add(time.Hour), Extra: map[string]any{"identity": id}}, nil
	}, nil)(streamable)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, ok := identify(w, r)
		if !ok {
			return
		}
		r = r.Clone(context.WithValue(r.Context(), identityKey{}, id))
		r.Header.Set("Authorization", "Bearer identified")
		withIdentity.ServeHTTP(w, r)
	})
}

func fromToken(_ context.Context, extra *sdk.RequestExtra) (Identity, error) {
	if extra != nil && extra.TokenInfo != nil {
		if id, ok := extra.TokenInfo.Extra["identity"].(Identity); ok {
			return id, nil
		}
	}
	return Identity{}, errors.New("this request has no identity")
}
