// Package console is Hector's web console at /ui: server-rendered pages
// (html/template, with htmx for the parts that update in place) over the
// REST API. Every page is made from API calls carrying the signed-in
// credential, in process, so the console shows exactly what that
// credential could read with curl, and no more.
package console

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

const (
	credentialCookie = "hector_console" // the signed-in API key or JWT
	nonceCookie      = "hector_csrf"    // a random value forms prove they saw
)

// Console serves the web console.
type Console struct {
	api         http.Handler
	authEnabled bool
	logger      *slog.Logger
	pages       map[string]*template.Template
	// secret signs CSRF tokens when no credential is signed in (auth off).
	secret    []byte
	mux       *http.ServeMux
	protected http.Handler
}

// New returns the console over api, the server's REST handler. With
// authEnabled, every page but sign-in needs a credential.
func New(api http.Handler, authEnabled bool, logger *slog.Logger) (*Console, error) {
	c := &Console{api: api, authEnabled: authEnabled, logger: logger, pages: map[string]*template.Template{}, secret: make([]byte, 32)}
	rand.Read(c.secret)
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	for _, name := range names {
		if name == "templates/layout.html" {
			continue
		}
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", name)
		if err != nil {
			return nil, fmt.Errorf("console template %s: %w", name, err)
		}
		c.pages[strings.TrimSuffix(strings.TrimPrefix(name, "templates/"), ".html")] = t
	}
	assets, _ := fs.Sub(assetFS, "assets")
	mux := http.NewServeMux()
	mux.Handle("GET /ui/assets/", http.StripPrefix("/ui/assets/", cacheForever(http.FileServerFS(assets))))
	mux.HandleFunc("GET /ui/signin", c.signInPage)
	mux.HandleFunc("POST /ui/signin", c.signIn)
	mux.HandleFunc("POST /ui/signout", c.signOut)
	mux.HandleFunc("GET /ui/{$}", c.home)
	mux.HandleFunc("GET /ui/apps/{app}/users/{user}", c.userSessions)
	mux.HandleFunc("GET /ui/apps/{app}/users/{user}/sessions/{id}", c.sessionPage)
	mux.HandleFunc("POST /ui/apps/{app}/users/{user}/sessions/{id}/preview", c.preview)
	mux.HandleFunc("GET /ui/apps/{app}/users/{user}/search", c.search)
	mux.HandleFunc("GET /ui/apps/{app}/users/{user}/facts", c.facts)
	mux.HandleFunc("POST /ui/apps/{app}/users/{user}/facts", c.addFact)
	mux.HandleFunc("POST /ui/apps/{app}/users/{user}/facts/forget", c.forgetFact)
	mux.HandleFunc("GET /ui/apps/{app}/users/{user}/facts/history", c.factHistory)
	mux.HandleFunc("GET /ui/apps/{app}/users/{user}/state", c.statePage)
	mux.HandleFunc("POST /ui/apps/{app}/users/{user}/erase", c.eraseUser)
	mux.HandleFunc("GET /ui/apps/{app}/users/{user}/export", c.exportUser)
	mux.HandleFunc("GET /ui/apps/{app}/users/{user}/sessions/{id}/artifacts/{name}", c.artifact)
	mux.HandleFunc("GET /ui/index", c.indexPage)
	mux.HandleFunc("POST /ui/index/rebuild", c.rebuild)
	c.mux = mux
	// Browsers say where a request comes from: a write from another site is
	// refused before any handler runs, the sign-in form included.
	c.protected = http.NewCrossOriginProtection().Handler(http.HandlerFunc(c.serve))
	return c, nil
}

func cacheForever(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Asset names carry their version.
		w.Header().Set("Cache-Control", "public, max-age=31536000, immutable")
		h.ServeHTTP(w, r)
	})
}

func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	c.protected.ServeHTTP(w, r)
}

func (c *Console) serve(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; frame-ancestors 'none'; form-action 'self'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	c.mux.ServeHTTP(w, r)
}

// request is one page view: who is asking, through which credential.
type request struct {
	w          http.ResponseWriter
	r          *http.Request
	credential string
	viewer     viewer
	csrf       string
}

type viewer struct {
	Name, Role, App, User string
}

func (v viewer) Admin() bool { return v.Role == "admin" }

// MayErase reports whether the viewer's credential may erase users: an
// app's or the admin's (a user's own only when the server allows it,
// which the API decides).
func (v viewer) MayErase() bool { return v.Role == "admin" || v.Role == "app" }

// begin authenticates a page view; on false it has answered already.
func (c *Console) begin(w http.ResponseWriter, r *http.Request) (*request, bool) {
	req := &request{w: w, r: r}
	if ck, err := r.Cookie(credentialCookie); err == nil {
		req.credential = ck.Value
	}
	if c.authEnabled && req.credential == "" {
		http.Redirect(w, r, "/ui/signin", http.StatusSeeOther)
		return nil, false
	}
	status, body := c.call(req, "GET", "/v1/whoami", nil)
	if status == http.StatusUnauthorized {
		clearCookie(w, r, credentialCookie)
		http.Redirect(w, r, "/ui/signin", http.StatusSeeOther)
		return nil, false
	}
	if err := json.Unmarshal(body, &req.viewer); err != nil || status != http.StatusOK {
		c.fail(req, status, body)
		return nil, false
	}
	req.csrf = c.csrfToken(w, r, req.credential)
	if r.Method == http.MethodPost && !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(req.csrf)) {
		c.render(req, http.StatusForbidden, "error", map[string]any{"Title": "Refused", "Message": "This form is stale or did not come from this console (CSRF check failed): reload the page and try again."})
		return nil, false
	}
	return req, true
}

// csrfToken is the token this browser's forms carry: an HMAC of its nonce
// cookie, keyed by the credential (or, with auth off, by a secret of this
// process), so a page from another site can neither read nor forge it.
func (c *Console) csrfToken(w http.ResponseWriter, r *http.Request, credential string) string {
	nonce := ""
	if ck, err := r.Cookie(nonceCookie); err == nil && len(ck.Value) == 32 {
		nonce = ck.Value
	} else {
		b := make([]byte, 16)
		rand.Read(b)
		nonce = hex.EncodeToString(b)
		setCookie(w, r, nonceCookie, nonce)
		// This request's form, if any, cannot match a nonce made just now.
	}
	key := c.secret
	if credential != "" {
		sum := sha256.Sum256([]byte("hector console csrf\x00" + credential))
		key = sum[:]
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(nonce))
	return hex.EncodeToString(m.Sum(nil))
}

func setCookie(w http.ResponseWriter, r *http.Request, name, value string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: value, Path: "/ui", HttpOnly: true, SameSite: http.SameSiteStrictMode,
		Secure: secure(r), MaxAge: int((12 * time.Hour).Seconds())})
}

func clearCookie(w http.ResponseWriter, r *http.Request, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Path: "/ui", HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: secure(r), MaxAge: -1})
}

func secure(r *http.Request) bool {
	return r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https"
}

// call makes an API request in process with the viewer's credential.
func (c *Console) call(req *request, method, path string, body any) (int, []byte) {
	rec := c.send(req, method, path, body)
	return rec.status, rec.body.Bytes()
}

// send is call with the whole answer, headers included.
func (c *Console) send(req *request, method, path string, body any) *recorder {
	rec := &recorder{header: http.Header{}, status: http.StatusOK}
	c.api.ServeHTTP(rec, c.apiRequest(req, method, path, body))
	return rec
}

// apiRequest is a request to the API with the viewer's credential.
func (c *Console) apiRequest(req *request, method, path string, body any) *http.Request {
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	r, _ := http.NewRequestWithContext(req.r.Context(), method, path, rd)
	r.RemoteAddr = req.r.RemoteAddr
	if req.credential != "" {
		r.Header.Set("Authorization", "Bearer "+req.credential)
	}
	if body != nil {
		r.Header.Set("Content-Type", "application/json")
	}
	return r
}

// get calls the API and decodes its answer into out; on an error it renders
// the error page and returns false.
func (c *Console) get(req *request, path string, out any) bool {
	status, body := c.call(req, "GET", path, nil)
	if status != http.StatusOK {
		c.fail(req, status, body)
		return false
	}
	if err := json.Unmarshal(body, out); err != nil {
		c.fail(req, http.StatusBadGateway, nil)
		return false
	}
	return true
}

type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header         { return r.header }
func (r *recorder) Write(b []byte) (int, error) { return r.body.Write(b) }
func (r *recorder) WriteHeader(status int)      { r.status = status }

// apiMessage is the message of an API error answer.
func apiMessage(body []byte) (code, message string) {
	var e struct {
		Error struct{ Code, Message string }
	}
	json.Unmarshal(body, &e)
	return e.Error.Code, e.Error.Message
}

// fail renders an API error as a page with the same status.
func (c *Console) fail(req *request, status int, body []byte) {
	_, msg := apiMessage(body)
	title := http.StatusText(status)
	switch status {
	case http.StatusForbidden:
		msg = "You are signed in as " + req.viewer.Name + ", which may not see this."
	case http.StatusNotFound:
		if msg == "" {
			msg = "There is nothing here."
		}
	}
	if msg == "" {
		msg = "Something went wrong; the server log has the details."
	}
	c.render(req, status, "error", map[string]any{"Title": title, "Message": msg})
}

// render writes a page (or, for an htmx request, only its "main" block).
func (c *Console) render(req *request, status int, page string, data map[string]any) {
	t := c.pages[page]
	if data == nil {
		data = map[string]any{}
	}
	data["Viewer"] = req.viewer
	data["CSRF"] = req.csrf
	data["AuthEnabled"] = c.authEnabled
	name := "layout.html"
	if req.r.Header.Get("HX-Request") == "true" && req.r.Header.Get("HX-Boosted") != "true" {
		name = "main"
	}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, name, data); err != nil {
		c.logger.Error("console: rendering", "page", page, "error", err)
		http.Error(req.w, "the console could not render this page", http.StatusInternalServerError)
		return
	}
	req.w.Header().Set("Content-Type", "text/html; charset=utf-8")
	req.w.Header().Set("Cache-Control", "no-store")
	req.w.WriteHeader(status)
	req.w.Write(buf.Bytes())
}

var funcs = template.FuncMap{
	// clip is the start of a long text, and how many characters it leaves
	// out: a megabyte message would make a page no browser shows well.
	"clip": func(text string) clipped {
		r := []rune(text)
		if len(r) <= maxShownChars {
			return clipped{Text: text}
		}
		return clipped{Text: string(r[:maxShownChars]), Left: len(r) - maxShownChars}
	},
	"path": func(parts ...string) string {
		var b strings.Builder
		for _, p := range parts {
			b.WriteString("/" + url.PathEscape(p))
		}
		return b.String()
	},
	"when": func(v any) string {
		var t time.Time
		switch v := v.(type) {
		case time.Time:
			t = v
		case *time.Time:
			if v != nil {
				t = *v
			}
		}
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02 15:04:05 UTC")
	},
	"json": func(v any) string {
		raw, _ := json.MarshalIndent(v, "", "  ")
		return string(raw)
	},
	"query": url.QueryEscape,
}

// maxShownChars bounds the text of one message part a page shows.
const maxShownChars = 5000

type clipped struct {
	Text string
	Left int // characters not shown
}
