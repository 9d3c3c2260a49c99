package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/hectormem/hector/pkg/config"
)

// With JWTs, a 401 from /mcp names the protected-resource document
// (RFC 9728), and the document, fetched and checked the way the MCP SDK's
// client does, names /mcp as the resource and the issuer as the
// authorization server; the API's 401s name the document of the root.
func TestProtectedResourceMetadata(t *testing.T) {
	s := newTestServer(t, func(c *config.Config) { c.Server.Auth.JWT.Issuer = "https://auth.example.com/realms/hector" })
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)

	req, _ := http.NewRequest("POST", hs.URL+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	challenges, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if resp.StatusCode != 401 || err != nil || len(challenges) != 1 || challenges[0].Scheme != "bearer" {
		t.Fatalf("/mcp without a credential: %s, challenges %+v, %v", resp.Status, challenges, err)
	}
	where := challenges[0].Params["resource_metadata"]
	if where != hs.URL+"/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("the challenge names %q", where)
	}
	doc, err := oauthex.GetProtectedResourceMetadata(t.Context(), where, hs.URL+"/mcp", http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.AuthorizationServers) != 1 || doc.AuthorizationServers[0] != "https://auth.example.com/realms/hector" || doc.BearerMethodsSupported[0] != "header" {
		t.Errorf("the document: %+v", doc)
	}

	rest, err := http.Get(hs.URL + "/v1/apps/a/users/alice/sessions")
	if err != nil {
		t.Fatal(err)
	}
	rest.Body.Close()
	if got := rest.Header.Get("WWW-Authenticate"); rest.StatusCode != 401 || got != `Bearer resource_metadata="`+hs.URL+`/.well-known/oauth-protected-resource"` {
		t.Errorf("the API without a credential: %s %q", rest.Status, got)
	}
	if _, err := oauthex.GetProtectedResourceMetadata(t.Context(), hs.URL+"/.well-known/oauth-protected-resource", hs.URL, http.DefaultClient); err != nil {
		t.Errorf("the root document: %v", err)
	}

	// API keys alone: there is no authorization server to point at.
	keys := newTestServer(t, func(c *config.Config) { c.Server.Auth.JWT = nil })
	if w := do(t, keys, "GET", "/.well-known/oauth-protected-resource", "", nil); w.Code != 404 {
		t.Errorf("the document without JWTs: %d", w.Code)
	}
	if w := do(t, keys, "GET", "/v1/apps/a/users/alice/sessions", "", nil); w.Code != 401 || w.Header().Get("WWW-Authenticate") != "Bearer" {
		t.Errorf("a 401 without JWTs: %d %q", w.Code, w.Header().Get("WWW-Authenticate"))
	}
}
