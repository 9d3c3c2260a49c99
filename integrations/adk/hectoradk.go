// Package hectoradk gives agents built with ADK (google.golang.org/adk/v2)
// Hector as their session, memory and artifact services: the sessions are
// Hector's (the source of truth, on SQLite, PostgreSQL or MySQL), the
// memory is Hector's index over every session of a user, never another
// user's, and the artifacts are Hector's versioned files.
//
// Connect reaches a running `hector serve`; New uses Hector's stores in
// the same process, for one binary. Both pass ADK's own session suite.
package hectoradk

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"google.golang.org/adk/v2/artifact"
	"google.golang.org/adk/v2/memory"
	"google.golang.org/adk/v2/session"

	"github.com/hectormem/hector/pkg/app"
)

// Services are ADK's three services on one Hector: give them to ADK's
// runner (runner.Config's SessionService, MemoryService, ArtifactService).
type Services struct {
	Session  session.Service
	Memory   memory.Service
	Artifact artifact.Service
}

func on(b backend) *Services {
	return &Services{Session: sessionService{b}, Memory: memoryService{b}, Artifact: artifactService{b}}
}

// New returns the services on Hector's stores in this process, as
// app.Open opened them from a configuration.
func New(h *app.Services) *Services { return on(local{h}) }

// Option changes how Connect reaches the server.
type Option func(*remote)

// WithHTTPClient sends the requests through c (its timeouts, transport,
// proxy) rather than http.DefaultClient.
func WithHTTPClient(c *http.Client) Option { return func(r *remote) { r.client = c } }

// Connect returns the services on the `hector serve` at baseURL (such as
// "http://127.0.0.1:8080"), calling it with apiKey ("" when the server
// takes no credential). A user's key reaches that user's sessions; listing
// every user's sessions of an app takes an app or admin key. Connect makes
// no request: the first call says whether the server answers.
func Connect(baseURL, apiKey string, opts ...Option) (*Services, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("hectoradk: %q is not a server's URL such as http://127.0.0.1:8080", baseURL)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("hectoradk: give the server's URL without a query or fragment")
	}
	r := &remote{base: strings.TrimSuffix(u.String(), "/"), apiKey: apiKey, client: http.DefaultClient}
	for _, opt := range opts {
		opt(r)
	}
	return on(*r), nil
}
