package server

import (
	"net/http"
	"net/url"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// OAuth 2.0 Protected Resource Metadata (RFC 9728), served when auth takes
// JWTs, so that an MCP client told 401 can find where to get a token: the
// 401's WWW-Authenticate names the document, the document names the
// authorization server (server.auth.jwt.issuer).

// The documents: one for /mcp, at the path MCP clients try first, and one
// for the whole API at the root.
const (
	protectedResourcePath    = "/.well-known/oauth-protected-resource"
	protectedResourceMCPPath = protectedResourcePath + "/mcp"
)

// baseURL is the server as the request reached it.
func baseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

func (s *Server) protectedResource(w http.ResponseWriter, r *http.Request) error {
	if s.cfg.Server.Auth.JWT == nil {
		return &apiError{http.StatusNotFound, "not_found", "this server takes no JWTs: it has no protected-resource metadata (API keys go in the Authorization header)"}
	}
	resource := baseURL(r)
	if r.URL.Path == protectedResourceMCPPath {
		resource += "/mcp"
	}
	doc := oauthex.ProtectedResourceMetadata{Resource: resource, BearerMethodsSupported: []string{"header"}, ResourceName: "Hector memory"}
	if issuer := s.cfg.Server.Auth.JWT.Issuer; isHTTPURL(issuer) {
		doc.AuthorizationServers = []string{issuer}
	}
	w.Header().Set("Access-Control-Allow-Origin", "*") // public, and read by browser-based clients
	writeJSON(w, http.StatusOK, doc)
	return nil
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
}

// challenge is the WWW-Authenticate of a 401 for a request to path: with
// JWTs, it names the protected-resource document.
func (s *Server) challenge(r *http.Request, doc string) string {
	if s.cfg.Server.Auth.JWT == nil {
		return "Bearer"
	}
	return `Bearer resource_metadata="` + baseURL(r) + doc + `"`
}
