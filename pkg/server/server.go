// Package server is the HTTP API of `hector serve`: sessions, state,
// artifacts, memory search and working memory over JSON, with auth, rate
// limits, metrics and an OpenAPI document generated from the same route
// table the router is built from.
package server

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"golang.org/x/time/rate"

	"github.com/hectormem/hector/pkg/agent"
	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/console"
	"github.com/hectormem/hector/pkg/ident"
	"github.com/hectormem/hector/pkg/telemetry"
	"github.com/hectormem/hector/pkg/workingmemory"
)

// scope says who may call a route.
type scope int

const (
	scopePublic scope = iota // no credential needed
	scopeAdmin               // admin credentials only
	scopeApp                 // /v1/apps/{app}/…: admin, or an app credential for {app}
	scopeUser                // /v1/apps/{app}/users/{user}/…: also a user credential for {user}
	scopeCaller              // any valid credential; the handler checks the app and user the body names
)

type route struct {
	method, path string
	name         string // the OpenAPI operationId: a generated client's method name
	summary      string
	scope        scope
	handle       func(w http.ResponseWriter, r *http.Request) error
	query        []string // query parameters, for the OpenAPI document
	request      string   // OpenAPI schema name of the body, if any
	response     string   // OpenAPI schema name of the 2xx body
	status       int      // success status
	also         []int    // other statuses it answers with: a success's body is response's, an error's an Error
	// stream: the body is streamed into stores that bound what they keep,
	// rather than bounded by server.limits.max_body_mb.
	stream bool
}

// Server serves Hector's API over the configured stores.
type Server struct {
	svcs    *app.Services
	cfg     *config.Config
	logger  *slog.Logger
	auth    *authenticator
	metrics *metrics
	routes  []route
	handler http.Handler

	failures failureLog

	limitMu         sync.Mutex
	limiters        map[string]*rate.Limiter
	sweepLimitersAt int // the map's size at which idle limiters are dropped

	strategyMu sync.Mutex
	strategies map[workingmemory.Config]workingmemory.Strategy

	rebuild rebuildState
	// eraseWait is how long an erasure request waits for the receipt
	// before answering 202 with where to follow it.
	eraseWait time.Duration
	agents    map[string]*agent.Runner
}

// New builds the server's handler.
func New(svcs *app.Services, cfg *config.Config, logger *slog.Logger) (*Server, error) {
	au, err := newAuthenticator(cfg.Server.Auth)
	if err != nil {
		return nil, err
	}
	s := &Server{svcs: svcs, cfg: cfg, logger: logger, auth: au, metrics: newMetrics(svcs),
		limiters: map[string]*rate.Limiter{}, sweepLimitersAt: minLimiterSweep, eraseWait: defaultEraseWait, strategies: map[workingmemory.Config]workingmemory.Strategy{}}
	if s.agents, err = svcs.Agents(cfg, logger); err != nil {
		return nil, err
	}
	s.routes = s.table()
	mux := http.NewServeMux()
	for _, rt := range s.routes {
		mux.Handle(rt.method+" "+rt.path, s.wrap(rt))
	}
	mcpHandler := s.mcpHandler()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		r, endSpan := telemetry.Request(r, r.Method+" /mcp")
		defer func() { endSpan(rec.status) }()
		mcpHandler.ServeHTTP(rec, r)
	}))
	ui, err := console.New(mux, s.auth.enabled(), logger)
	if err != nil {
		return nil, err
	}
	mux.Handle("/ui/", ui)
	mux.Handle("GET /ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently))
	allowed := s.allowedMethods()
	unrouted := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/" && r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html") {
			http.Redirect(w, r, "/ui/", http.StatusSeeOther) // a browser: the console
			return
		}
		if methods := allowed(r); methods != "" {
			w.Header().Set("Allow", methods)
			writeError(w, &apiError{http.StatusMethodNotAllowed, "method_not_allowed", r.URL.Path + " takes " + methods + ", not " + r.Method})
			return
		}
		writeError(w, &apiError{http.StatusNotFound, "not_found", "no route " + r.Method + " " + r.URL.Path + ": the API is described at /openapi.json, the console is at /ui/"})
	})
	mux.Handle("/", unrouted)
	// Every route's path for the other methods too: without, a path that
	// is one of "…/facts/{key...}" but for its slash (DELETE …/facts)
	// would be redirected to it rather than answered 405.
	for path := range s.routePaths() {
		mux.Handle(path, unrouted)
	}
	s.handler = s.guard(mux)
	return s, nil
}

// allowedMethods returns what says which methods a request's path takes
// ("" for a path no route has): every route's path is matched as the
// routes are, whatever the method.
func (s *Server) allowedMethods() func(r *http.Request) string {
	paths := http.NewServeMux()
	methods := s.routePaths()
	for path := range methods {
		paths.Handle(path, http.NotFoundHandler())
	}
	return func(r *http.Request) string {
		_, pattern := paths.Handler(r)
		return strings.Join(methods[pattern], ", ")
	}
}

// routePaths maps each route's path to the methods it takes.
func (s *Server) routePaths() map[string][]string {
	methods := map[string][]string{}
	for _, rt := range s.routes {
		methods[rt.path] = append(methods[rt.path], rt.method)
	}
	return methods
}

// guard refuses what a web page of another site can make a browser send:
// a write from another origin (a form or a fetch of text/plain needs no
// permission from the API, and with auth off, the zero-config default,
// would be acted on), and, on a loopback address, a request for a host
// name that is not this machine's (DNS rebinding: a page whose name points
// at 127.0.0.1 is same-origin with itself). Clients that are not browsers
// send neither sign and are not affected.
func (s *Server) guard(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{http.StatusForbidden, "cross_origin", "a write from a page of another origin is refused"})
	}))
	h := wellFormed(cop.Handler(next))
	if !IsLoopback(s.cfg.Server.Address) {
		return h
	}
	allowed := map[string]bool{}
	for _, name := range s.cfg.Server.AllowedHosts {
		allowed[strings.ToLower(name)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.ToLower(strings.Trim(host, "[]"))
		if !loopbackHost(host) && !allowed[host] {
			writeError(w, &apiError{http.StatusForbidden, "host_not_allowed", fmt.Sprintf(
				"this server listens on loopback and answers to localhost and loopback addresses only, not to host %q: if that name is yours, add it to server.allowed_hosts", r.Host)})
			return
		}
		h.ServeHTTP(w, r)
	})
}

// wellFormed refuses a path or query that is not valid UTF-8 or holds a
// NUL: no name Hector stores can, and PostgreSQL would fail on it with a 500.
func wellFormed(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bad := func(s string) bool { return !utf8.ValidString(s) || strings.ContainsRune(s, 0) }
		what := ""
		if bad(r.URL.Path) {
			what = "path"
		}
		for name, values := range r.URL.Query() {
			if bad(name) || slices.ContainsFunc(values, bad) {
				what = "query"
			}
		}
		if what != "" {
			writeError(w, toAPIError(badRequest("the request's %s is not valid UTF-8 or holds a NUL (%%00): percent-encode names as UTF-8", what)))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func loopbackHost(host string) bool {
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.handler.ServeHTTP(w, r) }

// AuthEnabled reports whether the server checks credentials.
func (s *Server) AuthEnabled() bool { return s.auth.enabled() }

type principalKey struct{}

func principalOf(ctx context.Context) principal {
	p, _ := ctx.Value(principalKey{}).(principal)
	return p
}

// wrap adds what every route needs: auth, rate limits, body limits,
// metrics and error writing.
func (s *Server) wrap(rt route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		r, endSpan := telemetry.Request(r, rt.method+" "+rt.path)
		defer func() {
			endSpan(rec.status)
			s.metrics.observe(rt.method+" "+rt.path, rec.status, time.Since(start))
		}()
		err := checkPathIDs(r)
		if err == nil {
			err = s.admit(rt, r)
		}
		if err == nil {
			err = checkQuery(rt, r)
		}
		if err == nil && rt.writesUser() {
			err = s.svcs.Erasures.Held(r.Context(), r.PathValue("app"), r.PathValue("user"))
		}
		if err != nil {
			e := toAPIError(err)
			if e.status == http.StatusUnauthorized {
				rec.Header().Set("WWW-Authenticate", s.challenge(r, protectedResourcePath))
			}
			writeError(rec, e)
			return
		}
		if !rt.stream {
			r.Body = http.MaxBytesReader(rec, r.Body, int64(s.cfg.Server.Limits.MaxBodyMB)<<20)
		}
		if err := rt.handle(rec, r); err != nil {
			e := toAPIError(err)
			if e.status >= 500 {
				s.failures.log(s.logger, rt.method+" "+rt.path, e, err)
			}
			writeError(rec, e)
		}
	})
}

// checkPathIDs refuses an app name, user ID or session ID in the path that
// no store takes, before anything is written or recorded: one check for
// every route, so no route can keep memory under an ID others refuse.
func checkPathIDs(r *http.Request) error {
	for _, p := range [...]struct{ name, what string }{{"app", "app name"}, {"user", "user ID"}, {"id", "session ID"}} {
		if !strings.Contains(r.Pattern, "{"+p.name+"}") {
			continue
		}
		if err := ident.Check(p.what, r.PathValue(p.name)); err != nil {
			return err
		}
	}
	return nil
}

// writesUser: the route may write to the path's user, and is held while
// they are being erased (reads are not, nor is the erasure itself).
func (rt route) writesUser() bool {
	return strings.Contains(rt.path, "{user}") && rt.method != http.MethodGet && rt.name != "eraseUser"
}

// reach checks the app and user a request names in its body or headers
// (the gateway, agents, MCP) as the path's are checked: IDs every store
// takes, and a user who is not being erased.
func (s *Server) reach(ctx context.Context, app, user string) error {
	if err := ident.Check("app name", app); err != nil {
		return err
	}
	if err := ident.Check("user ID", user); err != nil {
		return err
	}
	return s.svcs.Erasures.Held(ctx, app, user)
}

// checkQuery refuses query parameters the route does not take: a misspelt
// one would otherwise be ignored, and the request answered as if it were
// not there.
func checkQuery(rt route, r *http.Request) error {
	for name := range r.URL.Query() {
		if slices.Contains(rt.query, name) {
			continue
		}
		if len(rt.query) == 0 {
			return badRequest("unknown query parameter %q: %s %s takes none", name, rt.method, rt.path)
		}
		return badRequest("unknown query parameter %q: %s %s takes %s", name, rt.method, rt.path, strings.Join(rt.query, ", "))
	}
	return nil
}

// admit authenticates, authorises and rate-limits a request.
func (s *Server) admit(rt route, r *http.Request) error {
	if rt.scope == scopePublic {
		return nil
	}
	p, err := s.auth.authenticate(r)
	if err != nil {
		return s.refused(r, err)
	}
	if !p.may(rt.scope, r.PathValue("app"), r.PathValue("user")) {
		return errForbidden
	}
	if err := s.allow(p); err != nil {
		return err
	}
	*r = *r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
	return nil
}

// refused answers a failed authentication, and rate-limits failures per
// client address so keys cannot be guessed at speed.
func (s *Server) refused(r *http.Request, err error) error {
	host, _, splitErr := net.SplitHostPort(r.RemoteAddr)
	if splitErr != nil {
		host = r.RemoteAddr
	}
	if !s.limiter("unauthenticated:" + host).Allow() {
		return s.rateLimited("failed authentications from this address")
	}
	return err
}

// allow rate-limits a credential's requests. With auth off, the server
// listens on loopback only: its one user is this machine's, and a local
// import is not slowed down.
func (s *Server) allow(p principal) error {
	if !s.auth.enabled() || s.limiter(p.name).Allow() {
		return nil
	}
	return s.rateLimited("requests for this credential")
}

// rateLimited is a 429 that says what the limit is and where it is set;
// writeError asks the client to retry after a second, when the bucket has
// tokens again.
func (s *Server) rateLimited(what string) error {
	l := s.cfg.Server.Limits
	return &apiError{http.StatusTooManyRequests, "rate_limited", fmt.Sprintf(
		"too many %s: at most %g a second, in bursts of %d (server.limits.requests_per_second and server.limits.burst): retry after the Retry-After header's seconds",
		what, l.RequestsPerSecond, l.Burst)}
}

func (s *Server) limiter(name string) *rate.Limiter {
	s.limitMu.Lock()
	defer s.limitMu.Unlock()
	l := s.limiters[name]
	if l == nil {
		if len(s.limiters) >= s.sweepLimitersAt {
			s.sweepLimiters()
		}
		l = rate.NewLimiter(rate.Limit(s.cfg.Server.Limits.RequestsPerSecond), s.cfg.Server.Limits.Burst)
		s.limiters[name] = l
	}
	return l
}

// sweepLimiters drops the limiters whose bucket has filled up again: a new
// one for the same name would be no different. Without it, every client
// address that ever failed to authenticate would be kept for good. It runs
// when the map has doubled since the last sweep, so it costs each new
// name O(1) on average.
func (s *Server) sweepLimiters() {
	now := time.Now()
	for name, l := range s.limiters {
		if l.TokensAt(now) >= float64(l.Burst()) {
			delete(s.limiters, name)
		}
	}
	s.sweepLimitersAt = max(minLimiterSweep, 2*len(s.limiters))
}

const minLimiterSweep = 1024

// defaultEraseWait is well inside any client's and proxy's timeout.
const defaultEraseWait = 20 * time.Second

type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (r *statusRecorder) WriteHeader(code int) {
	r.status = code
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// userPath is the prefix of every route about one user.
const userPath = "/v1/apps/{app}/users/{user}"

func (s *Server) table() []route {
	return []route{
		{method: "GET", name: "health", path: "/healthz", summary: "The process is up", scope: scopePublic, handle: s.healthz, response: "Status", status: 200},
		{method: "GET", name: "ready", path: "/readyz", summary: "The stores answer", scope: scopePublic, handle: s.readyz, response: "Status", status: 200},
		{method: "GET", name: "metrics", path: "/metrics", summary: "Prometheus metrics", scope: scopeAdmin, handle: s.serveMetrics, response: "Metrics", status: 200},
		{method: "GET", name: "whoami", path: "/v1/whoami", summary: "Who this credential is and what it may reach", scope: scopeCaller, handle: s.whoami, response: "Whoami", status: 200},
		{method: "GET", name: "listAllUsers", path: "/v1/users", summary: "Every app's users that have sessions or facts", scope: scopeAdmin, handle: s.listUsers, query: []string{"page_size", "page_token"}, response: "UserList", status: 200},
		{method: "GET", name: "listAppUsers", path: "/v1/apps/{app}/users", summary: "One app's users that have sessions or facts", scope: scopeApp, handle: s.listUsers, query: []string{"page_size", "page_token"}, response: "UserList", status: 200},
		{method: "GET", name: "getExtractionStatus", path: "/v1/extraction", summary: "Extraction: its model, budget, each app's spending this hour and day, totals", scope: scopeAdmin, handle: s.extractionStatus, response: "ExtractionStatus", status: 200},
		{method: "GET", name: "getIndexStatus", path: "/v1/index", summary: "The index: type, store, lag, latest rebuild", scope: scopeAdmin, handle: s.indexStatus, response: "IndexStatus", status: 200},
		{method: "GET", name: "getProtectedResource", path: protectedResourcePath, summary: "OAuth protected-resource metadata (RFC 9728) of the API, when auth takes JWTs", scope: scopePublic, handle: s.protectedResource, response: "ProtectedResource", status: 200},
		{method: "GET", name: "getMCPProtectedResource", path: protectedResourceMCPPath, summary: "OAuth protected-resource metadata (RFC 9728) of /mcp, when auth takes JWTs", scope: scopePublic, handle: s.protectedResource, response: "ProtectedResource", status: 200},
		{method: "GET", name: "getOpenAPI", path: "/openapi.json", summary: "This document", scope: scopePublic, handle: s.openAPI, response: "OpenAPI", status: 200},

		{method: "POST", name: "createSession", path: userPath + "/sessions", summary: "Create a session", scope: scopeUser, handle: s.createSession, request: "CreateSession", response: "Session", status: 201},
		{method: "GET", name: "listSessions", path: userPath + "/sessions", summary: "List sessions, newest created first, or with order=updated last updated first", scope: scopeUser, handle: s.listSessions, query: []string{"page_size", "page_token", "order"}, response: "SessionList", status: 200},
		{method: "GET", name: "getSession", path: userPath + "/sessions/{id}", summary: "Get a session: recent keeps the newest events, after those after a time, before_seq those before a sequence number (page back with recent and the first seq of the page before)", scope: scopeUser, handle: s.getSession, query: []string{"recent", "after", "before_seq"}, response: "Session", status: 200},
		{method: "PATCH", name: "updateSession", path: userPath + "/sessions/{id}", summary: "Name a session: {\"title\": \"…\"} (an empty title removes it)", scope: scopeUser, handle: s.updateSession, request: "UpdateSession", response: "Session", status: 200},
		{method: "DELETE", name: "deleteSession", path: userPath + "/sessions/{id}", summary: "Delete a session and all that belongs to it", scope: scopeUser, handle: s.deleteSession, status: 204},
		{method: "POST", name: "appendEvent", path: userPath + "/sessions/{id}/events", summary: "Append an event (expected_seq for compare-and-swap)", scope: scopeUser, handle: s.appendEvent, request: "AppendEvent", response: "Event", status: 201},
		{method: "POST", name: "getContext", path: userPath + "/sessions/{id}/context", summary: "The events an LLM should see next", scope: scopeUser, handle: s.sessionContext, request: "ContextRequest", response: "Context", status: 200},
		{method: "POST", name: "extractMemories", path: userPath + "/sessions/{id}/memories:extract", summary: "Learn facts from the session's messages with the configured model (server.extraction)", scope: scopeUser, handle: s.extractMemories, request: "ExtractRequest", response: "ExtractResult", status: 200, also: []int{502}},

		{method: "GET", name: "getAppState", path: "/v1/apps/{app}/state", summary: "Get app state", scope: scopeApp, handle: s.getAppState, response: "State", status: 200},
		{method: "PATCH", name: "updateAppState", path: "/v1/apps/{app}/state", summary: "Change app state (null deletes a key)", scope: scopeApp, handle: s.patchAppState, request: "AppState", response: "State", status: 200},
		{method: "GET", name: "getUserState", path: userPath + "/state", summary: "Get user state", scope: scopeUser, handle: s.getUserState, response: "State", status: 200},
		{method: "PATCH", name: "updateUserState", path: userPath + "/state", summary: "Change user state (null deletes a key)", scope: scopeUser, handle: s.patchUserState, request: "UserState", response: "State", status: 200},

		{method: "GET", name: "listArtifacts", path: userPath + "/sessions/{id}/artifacts", summary: "List artifacts", scope: scopeUser, handle: s.listArtifacts, response: "ArtifactList", status: 200},
		{method: "PUT", name: "saveArtifact", path: userPath + "/sessions/{id}/artifacts/{name}", summary: "Save a new version (the body is the content)", scope: scopeUser, handle: s.putArtifact, request: "Content", response: "Artifact", status: 201, stream: true},
		{method: "GET", name: "loadArtifact", path: userPath + "/sessions/{id}/artifacts/{name}", summary: "Load the latest version, or ?version=N", scope: scopeUser, handle: s.getArtifact, query: []string{"version"}, response: "Content", status: 200},
		{method: "GET", name: "listArtifactVersions", path: userPath + "/sessions/{id}/artifacts/{name}/versions", summary: "List versions", scope: scopeUser, handle: s.artifactVersions, response: "ArtifactList", status: 200},
		{method: "DELETE", name: "deleteArtifact", path: userPath + "/sessions/{id}/artifacts/{name}", summary: "Delete every version", scope: scopeUser, handle: s.deleteArtifact, status: 204},

		{method: "DELETE", name: "eraseUser", path: userPath, summary: "Erase the user everywhere: sessions, state, artifacts, facts and their history, index entries; returns the receipt, or 202 with the running receipt and Location to follow it when the erasure outlasts 20 s; writes to the user answer 409 erasure_in_progress until it is verified (a user's own credential only with server.auth.self_erasure)", scope: s.eraseScope(), handle: s.eraseUser, response: "ErasureReceipt", status: 200, also: []int{202}},
		{method: "GET", name: "exportUser", path: userPath + "/export", summary: "Everything Hector holds about the user, as a tar archive (JSON lines and artifact files)", scope: scopeUser, handle: s.exportUser, response: "Archive", status: 200},
		{method: "POST", name: "importUser", path: userPath + "/import", summary: "Restore a user from an archive GET …/export made, here or in another deployment (the user must hold nothing yet)", scope: scopeApp, handle: s.importUser, request: "Archive", response: "ImportSummary", status: 201, stream: true},
		{method: "GET", name: "getErasureReceipt", path: userPath + "/erasure", summary: "The receipt of the user's latest erasure", scope: scopeApp, handle: s.erasureReceipt, response: "ErasureReceipt", status: 200},
		{method: "POST", name: "storeFact", path: userPath + "/facts", summary: "Store a fact (the same key again supersedes its value, which stays in its history)", scope: scopeUser, handle: s.storeFact, request: "StoreFact", response: "Fact", status: 201},
		{method: "GET", name: "listFacts", path: userPath + "/facts", summary: "List live facts, newest first; as_of lists those that held then", scope: scopeUser, handle: s.listFacts, query: []string{"prefix", "category", "as_of"}, response: "FactList", status: 200},
		{method: "GET", name: "recallFact", path: userPath + "/facts/{key...}", summary: "Recall a fact; as_of recalls the value that held then", scope: scopeUser, handle: s.getFact, query: []string{"as_of"}, response: "Fact", status: 200},
		{method: "GET", name: "factHistory", path: userPath + "/facts:history", summary: "Every value a fact's key held, oldest first", scope: scopeUser, handle: s.factHistory, query: []string{"key"}, response: "FactHistory", status: 200},
		{method: "POST", name: "invalidateFact", path: userPath + "/facts:invalidate", summary: "End a fact's value without a new one (it stays in its history)", scope: scopeUser, handle: s.invalidateFact, request: "InvalidateFact", response: "Fact", status: 200},
		{method: "DELETE", name: "deleteFact", path: userPath + "/facts/{key...}", summary: "Delete a fact", scope: scopeUser, handle: s.deleteFact, status: 204},
		{method: "POST", name: "forgetFacts", path: userPath + "/facts:forget", summary: "Forget facts: all, key:<k> or category:<c>", scope: scopeUser, handle: s.forgetFacts, request: "ForgetFacts", response: "Forgotten", status: 200},
		{method: "GET", name: "summarizeFacts", path: userPath + "/facts:summary", summary: "Category counts and recent keys, without values", scope: scopeUser, handle: s.factsSummary, response: "FactSummary", status: 200},
		{method: "POST", name: "searchMemory", path: userPath + "/memory:search", summary: "Search the user's past conversations", scope: scopeUser, handle: s.searchMemory, request: "SearchRequest", response: "SearchResponse", status: 200},
		{method: "GET", name: "listAgents", path: "/v1/agents", summary: "The configured agents the caller may run: app, model, working memory, tools", scope: scopeCaller, handle: s.listAgents, response: "AgentList", status: 200},
		{method: "POST", name: "runAgent", path: "/v1/agents/{agent}/run", summary: "Run one turn of a hosted agent (?stream=true for server-sent events)", scope: scopeCaller, handle: s.runAgent, query: []string{"stream"}, request: "RunRequest", response: "RunResult", status: 200},
		{method: "POST", name: "gatewaySearch", path: "/memories/search", summary: "Memory Gateway: search (user_key in the body)", scope: scopePublic, handle: s.gatewaySearch, request: "GatewaySearch", response: "GatewayResults", status: 200},
		{method: "POST", name: "gatewayAdd", path: "/memories/add", summary: "Memory Gateway: add a turn's messages", scope: scopePublic, handle: s.gatewayAdd, request: "GatewayAdd", response: "GatewayAdded", status: 200},
		{method: "POST", name: "gatewayFlush", path: "/memories/flush", summary: "Memory Gateway: make what was added searchable", scope: scopePublic, handle: s.gatewayFlush, request: "GatewayFlush", response: "GatewayFlushed", status: 200},
		{method: "POST", name: "startRebuild", path: "/v1/index:rebuild", summary: "Rebuild the index (one user, one app, or all)", scope: scopeAdmin, handle: s.startRebuild, request: "RebuildRequest", response: "RebuildStatus", status: 202},
		{method: "GET", name: "getRebuildStatus", path: "/v1/index:rebuild", summary: "The latest rebuild's progress", scope: scopeAdmin, handle: s.rebuildStatus, response: "RebuildStatus", status: 200},
	}
}

// IsLoopback reports whether an address listens on loopback only.
func IsLoopback(addr string) bool {
	host := addr
	if i := strings.LastIndex(addr, ":"); i >= 0 {
		host = addr[:i]
	}
	host = strings.Trim(host, "[]")
	return host == "localhost" || strings.HasPrefix(host, "127.") || host == "::1"
}
