package console

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/workingmemory"
)

func (c *Console) signInPage(w http.ResponseWriter, r *http.Request) {
	if !c.authEnabled {
		http.Redirect(w, r, "/ui/", http.StatusSeeOther)
		return
	}
	c.render(&request{w: w, r: r}, http.StatusOK, "signin", nil)
}

// signIn checks a credential against the API and keeps it in an HttpOnly,
// SameSite=Strict cookie. (The form is guarded by the cross-origin check
// around the console, as there is no credential yet to key a token with.)
func (c *Console) signIn(w http.ResponseWriter, r *http.Request) {
	token := strings.TrimSpace(r.PostFormValue("credential"))
	req := &request{w: w, r: r, credential: token}
	status, _ := c.call(req, "GET", "/v1/whoami", nil)
	if token == "" || status != http.StatusOK {
		c.render(req, http.StatusUnauthorized, "signin", map[string]any{"Error": "That API key or token was not accepted."})
		return
	}
	setCookie(w, r, credentialCookie, token)
	http.Redirect(w, r, "/ui/", http.StatusSeeOther)
}

func (c *Console) signOut(w http.ResponseWriter, r *http.Request) {
	if _, ok := c.begin(w, r); !ok {
		return
	}
	clearCookie(w, r, credentialCookie)
	http.Redirect(w, r, "/ui/signin", http.StatusSeeOther)
}

type userRow struct {
	App        string    `json:"app"`
	User       string    `json:"user"`
	Sessions   int       `json:"sessions"`
	Facts      int       `json:"facts"`
	LastUpdate time.Time `json:"last_update_time"` // of their sessions; zero with none
}

func (c *Console) home(w http.ResponseWriter, r *http.Request) {
	req, ok := c.begin(w, r)
	if !ok {
		return
	}
	v := req.viewer
	if v.Role == "user" {
		http.Redirect(w, r, "/ui/apps/"+url.PathEscape(v.App)+"/users/"+url.PathEscape(v.User), http.StatusSeeOther)
		return
	}
	path := "/v1/users"
	if v.Role == "app" {
		path = "/v1/apps/" + url.PathEscape(v.App) + "/users"
	}
	var page struct {
		Users         []userRow `json:"users"`
		NextPageToken string    `json:"next_page_token"`
	}
	if !c.get(req, path+"?page_size=50&page_token="+url.QueryEscape(r.URL.Query().Get("page")), &page) {
		return
	}
	base := "http://" + r.Host // the address this server was reached at, which the Host check has vouched for
	if r.TLS != nil {
		base = "https://" + r.Host
	}
	c.render(req, http.StatusOK, "home", map[string]any{"Title": "Users", "Users": page.Users, "Next": page.NextPageToken,
		"Unready": c.unready(req), "Base": base})
}

// unready names what /readyz says cannot serve (a store that does not
// answer, erasures a start could not finish), for an admin's home page.
func (c *Console) unready(req *request) []string {
	if req.viewer.Role != "admin" {
		return nil
	}
	_, body := c.call(req, "GET", "/readyz", nil)
	var ready struct {
		Unavailable []string `json:"unavailable"`
	}
	json.Unmarshal(body, &ready)
	return ready.Unavailable
}

// owner is the (app, user) of a page under /ui/apps/{app}/users/{user}.
type owner struct{ App, User string }

func ownerOf(r *http.Request) owner { return owner{r.PathValue("app"), r.PathValue("user")} }

// api is the owner's REST path.
func (o owner) api() string {
	return "/v1/apps/" + url.PathEscape(o.App) + "/users/" + url.PathEscape(o.User)
}

// page is the owner's console page of that name.
func (o owner) page(name string) string {
	return "/ui" + strings.TrimPrefix(o.api(), "/v1") + "/" + name
}

type sessionRow struct {
	ID         string         `json:"id"`
	Title      string         `json:"title"`
	State      map[string]any `json:"state"`
	LastSeq    int64          `json:"last_seq"`
	LastUpdate time.Time      `json:"last_update_time"`
}

func (c *Console) userSessions(w http.ResponseWriter, r *http.Request) {
	req, ok := c.begin(w, r)
	if !ok {
		return
	}
	c.renderSessions(req, http.StatusOK, nil)
}

func (c *Console) renderSessions(req *request, status int, extra map[string]any) {
	r := req.r
	o := ownerOf(r)
	var page struct {
		Sessions      []sessionRow `json:"sessions"`
		NextPageToken string       `json:"next_page_token"`
	}
	if !c.get(req, o.api()+"/sessions?order=updated&page_size=20&page_token="+url.QueryEscape(r.URL.Query().Get("page")), &page) {
		return
	}
	data := map[string]any{"Title": o.User + " · sessions", "Owner": o, "Tab": "sessions", "Sessions": page.Sessions, "Next": page.NextPageToken}
	for k, v := range extra {
		data[k] = v
	}
	c.render(req, status, "sessions", data)
}

// timelineEvent is an event as the timeline shows it: its tool calls with
// the results that answered them.
type timelineEvent struct {
	*session.Event
	Calls []callView
}

type callView struct {
	Call   session.ToolCall
	Result *session.ToolResult
}

type artifactRow struct{ artifacts.Info }

func (a artifactRow) Kind() string {
	switch {
	case artifacts.InlineImage(a.MimeType):
		return "image"
	case strings.HasPrefix(a.MimeType, "text/") || a.MimeType == "application/json":
		return "text"
	}
	return ""
}

func (c *Console) sessionPage(w http.ResponseWriter, r *http.Request) {
	req, ok := c.begin(w, r)
	if !ok {
		return
	}
	o := ownerOf(r)
	id := r.PathValue("id")
	var s struct {
		sessionRow
		Events []*session.Event `json:"events"`
	}
	// A page of the newest events, or of those before ?before=N: a session
	// of 100,000 events shows as quickly as one of ten.
	path := o.api() + "/sessions/" + url.PathEscape(id) + "?recent=" + strconv.Itoa(eventsPerPage)
	if before := r.URL.Query().Get("before"); before != "" {
		path += "&before_seq=" + url.QueryEscape(before)
	}
	if !c.get(req, path, &s) {
		return
	}
	var older int64 // the first event shown, when there are events before it
	if len(s.Events) > 0 && s.Events[0].Seq > 1 {
		older = s.Events[0].Seq
	}
	results := map[string]*session.ToolResult{}
	for _, ev := range s.Events {
		for _, res := range ev.ToolResults() {
			results[res.CallID] = &res
		}
	}
	timeline := make([]timelineEvent, len(s.Events))
	for i, ev := range s.Events {
		timeline[i] = timelineEvent{Event: ev}
		for _, call := range ev.ToolCalls() {
			timeline[i].Calls = append(timeline[i].Calls, callView{call, results[call.ID]})
		}
	}
	var arts struct {
		Artifacts []artifactRow `json:"artifacts"`
	}
	if !c.get(req, o.api()+"/sessions/"+url.PathEscape(id)+"/artifacts", &arts) {
		return
	}
	previews := map[string]string{}
	for _, a := range arts.Artifacts {
		if a.Kind() == "text" {
			status, body := c.call(req, "GET", o.api()+"/sessions/"+url.PathEscape(id)+"/artifacts/"+url.PathEscape(a.Name), nil)
			if status == http.StatusOK {
				previews[a.Name] = truncate(string(body), 2000)
			}
		}
	}
	title := "Session " + id
	if s.Title != "" {
		title = s.Title
	}
	c.render(req, http.StatusOK, "session", map[string]any{"Title": title, "Owner": o, "Tab": "sessions", "Session": s.sessionRow,
		"Events": timeline, "Shown": len(s.Events), "Older": older, "Artifacts": arts.Artifacts, "Previews": previews, "Strategies": strategies})
}

var strategies = []string{"all", "buffer_window", "token_window", "summary_buffer"}

// eventsPerPage is how many events a session's page shows.
const eventsPerPage = 100

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// preview shows which events a strategy would hand the model, with their
// token counts.
func (c *Console) preview(w http.ResponseWriter, r *http.Request) {
	req, ok := c.begin(w, r)
	if !ok {
		return
	}
	o := ownerOf(r)
	budget, _ := strconv.Atoi(r.PostFormValue("budget"))
	cfg := workingmemory.Config{Type: r.PostFormValue("strategy")}
	switch cfg.Type {
	case "token_window":
		cfg.MaxTokens = budget
	case "buffer_window", "summary_buffer":
		cfg.MaxMessages = budget
	}
	status, body := c.call(req, "POST", o.api()+"/sessions/"+url.PathEscape(r.PathValue("id"))+"/context", map[string]any{"working_memory": cfg})
	data := map[string]any{"Owner": o}
	if status != http.StatusOK {
		_, msg := apiMessage(body)
		data["Error"] = msg
		c.render(req, http.StatusOK, "preview", data)
		return
	}
	var out struct {
		Strategy    string           `json:"strategy"`
		Events      []*session.Event `json:"events"`
		TotalEvents int              `json:"total_events"`
	}
	json.Unmarshal(body, &out)
	counter, err := workingmemory.NewCounter(workingmemory.EncodingForModel(""))
	if err != nil {
		c.fail(req, http.StatusInternalServerError, nil)
		return
	}
	type kept struct {
		*session.Event
		Tokens int
	}
	var rows []kept
	total := 0
	for _, ev := range out.Events {
		n := counter.Event(ev)
		total += n
		rows = append(rows, kept{ev, n})
	}
	data["Strategy"], data["Kept"], data["Total"], data["Tokens"] = out.Strategy, rows, out.TotalEvents, total
	c.render(req, http.StatusOK, "preview", data)
}

type searchHit struct{ index.SearchResult }

// Signals says which search found a hit, at which rank, for a hybrid index.
func (h searchHit) Signals() string {
	var parts []string
	for _, kind := range []index.Kind{index.KindKeyword, index.KindVector} {
		if s, ok := h.SearchResult.Signals[string(kind)]; ok {
			own := "score"
			if kind == index.KindVector {
				own = "similarity"
			}
			parts = append(parts, fmt.Sprintf("%s rank %d (%s %.2f)", kind, s.Rank, own, s.Score))
		}
	}
	return strings.Join(parts, " · ")
}

func (c *Console) search(w http.ResponseWriter, r *http.Request) {
	req, ok := c.begin(w, r)
	if !ok {
		return
	}
	o := ownerOf(r)
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	data := map[string]any{"Title": o.User + " · search", "Owner": o, "Tab": "search", "Query": q}
	if q != "" {
		var out struct {
			Results []searchHit   `json:"results"`
			Facts   []facts.Match `json:"facts"`
		}
		status, body := c.call(req, "POST", o.api()+"/memory:search", map[string]any{"query": q, "limit": 20})
		if status != http.StatusOK {
			c.fail(req, status, body)
			return
		}
		json.Unmarshal(body, &out)
		data["Results"], data["Facts"] = out.Results, out.Facts
		data["Searched"] = true
	}
	c.render(req, http.StatusOK, "search", data)
}

func (c *Console) facts(w http.ResponseWriter, r *http.Request) {
	req, ok := c.begin(w, r)
	if !ok {
		return
	}
	c.renderFacts(req, http.StatusOK, nil)
}

func (c *Console) renderFacts(req *request, status int, form map[string]any) {
	o := ownerOf(req.r)
	prefix, category := req.r.URL.Query().Get("prefix"), req.r.URL.Query().Get("category")
	var list struct {
		Facts []facts.Fact `json:"facts"`
	}
	if !c.get(req, o.api()+"/facts?prefix="+url.QueryEscape(prefix)+"&category="+url.QueryEscape(category), &list) {
		return
	}
	data := map[string]any{"Title": o.User + " · facts", "Owner": o, "Tab": "facts", "Facts": list.Facts, "Prefix": prefix, "Category": category}
	for k, v := range form {
		data[k] = v
	}
	c.render(req, status, "facts", data)
}

// addFact stores a fact through the API; a refusal is shown beside the
// form, with the rule's code, and the form keeps what was typed.
func (c *Console) addFact(w http.ResponseWriter, r *http.Request) {
	req, ok := c.begin(w, r)
	if !ok {
		return
	}
	o := ownerOf(r)
	fact := map[string]any{"key": r.PostFormValue("key"), "value": r.PostFormValue("value")}
	if cat := strings.TrimSpace(r.PostFormValue("category")); cat != "" {
		fact["category"] = cat
	}
	status, body := c.call(req, "POST", o.api()+"/facts", fact)
	if status != http.StatusCreated {
		code, msg := apiMessage(body)
		c.renderFacts(req, http.StatusUnprocessableEntity, map[string]any{"Refusal": msg, "RefusalCode": code, "Form": fact})
		return
	}
	http.Redirect(w, r, o.page("facts"), http.StatusSeeOther)
}

func (c *Console) forgetFact(w http.ResponseWriter, r *http.Request) {
	req, ok := c.begin(w, r)
	if !ok {
		return
	}
	o := ownerOf(r)
	key := r.PostFormValue("key")
	var escaped []string
	for _, part := range strings.Split(key, "/") {
		escaped = append(escaped, url.PathEscape(part))
	}
	if status, body := c.call(req, "DELETE", o.api()+"/facts/"+strings.Join(escaped, "/"), nil); status != http.StatusNoContent {
		c.fail(req, status, body)
		return
	}
	http.Redirect(w, r, o.page("facts"), http.StatusSeeOther)
}

// factHistory shows every value a fact's key held, newest first, with
// when each held and where it came from.
func (c *Console) factHistory(w http.ResponseWriter, r *http.Request) {
	req, ok := c.begin(w, r)
	if !ok {
		return
	}
	o := ownerOf(r)
	key := r.URL.Query().Get("key")
	var history struct {
		Versions []facts.Fact `json:"versions"`
	}
	if !c.get(req, o.api()+"/facts:history?key="+url.QueryEscape(key), &history) {
		return
	}
	slices.Reverse(history.Versions)
	c.render(req, http.StatusOK, "facthistory", map[string]any{"Title": key + " · history", "Owner": o, "Tab": "facts", "Key": key,
		"Versions": history.Versions})
}

// eraseUser erases the user through the API once the viewer has typed the
// user's ID, and shows the receipt.
func (c *Console) eraseUser(w http.ResponseWriter, r *http.Request) {
	req, ok := c.begin(w, r)
	if !ok {
		return
	}
	o := ownerOf(r)
	if r.PostFormValue("confirm") != o.User {
		c.renderSessions(req, http.StatusUnprocessableEntity, map[string]any{"EraseRefusal": "Type the user's ID, " + o.User + ", to erase them."})
		return
	}
	status, body := c.call(req, "DELETE", o.api(), nil)
	if status != http.StatusOK {
		c.fail(req, status, body)
		return
	}
	var receipt struct {
		Verified bool      `json:"verified"`
		Finished time.Time `json:"finished"`
		By       string    `json:"by"`
		Stores   []struct {
			Store   string `json:"store"`
			Removed int    `json:"removed"`
			Left    int    `json:"left"`
		} `json:"stores"`
	}
	json.Unmarshal(body, &receipt)
	c.render(req, http.StatusOK, "receipt", map[string]any{"Title": o.User + " · erased", "Owner": o, "Receipt": receipt})
}

// exportUser downloads the user's archive from the API as it streams: an
// archive can be far larger than a page.
func (c *Console) exportUser(w http.ResponseWriter, r *http.Request) {
	req, ok := c.begin(w, r)
	if !ok {
		return
	}
	o := ownerOf(r)
	out := &streamed{to: w, header: http.Header{}}
	c.api.ServeHTTP(out, c.apiRequest(req, "GET", o.api()+"/export", nil))
	if out.status != http.StatusOK {
		c.fail(req, out.status, out.failed.Bytes())
	}
}

// streamed passes a successful answer on to the browser as it comes, and
// keeps a failed one for the error page.
type streamed struct {
	to     http.ResponseWriter
	header http.Header
	status int
	failed bytes.Buffer
}

func (s *streamed) Header() http.Header { return s.header }

func (s *streamed) WriteHeader(status int) {
	if s.status != 0 {
		return
	}
	s.status = status
	if status == http.StatusOK {
		for _, h := range []string{"Content-Type", "Content-Disposition"} {
			s.to.Header().Set(h, s.header.Get(h))
		}
		s.to.WriteHeader(status)
	}
}

func (s *streamed) Write(p []byte) (int, error) {
	s.WriteHeader(http.StatusOK)
	if s.status != http.StatusOK {
		return s.failed.Write(p)
	}
	return s.to.Write(p)
}

func (c *Console) statePage(w http.ResponseWriter, r *http.Request) {
	req, ok := c.begin(w, r)
	if !ok {
		return
	}
	o := ownerOf(r)
	var user, app struct {
		State map[string]any `json:"state"`
	}
	if !c.get(req, o.api()+"/state", &user) {
		return
	}
	data := map[string]any{"Title": o.User + " · state", "Owner": o, "Tab": "state", "UserState": user.State}
	// App state is the app's: a user credential may not read it.
	if status, body := c.call(req, "GET", "/v1/apps/"+url.PathEscape(o.App)+"/state", nil); status == http.StatusOK {
		json.Unmarshal(body, &app)
		data["AppState"], data["AppVisible"] = app.State, true
	}
	var page struct {
		Sessions []sessionRow `json:"sessions"`
	}
	if !c.get(req, o.api()+"/sessions?page_size=20", &page) {
		return
	}
	data["Sessions"] = page.Sessions
	c.render(req, http.StatusOK, "state", data)
}

// artifact serves an artifact's content to the browser: images and text
// inline, as what they are; anything else as a download. Nothing uploaded
// is ever served as HTML or script under the console's origin.
func (c *Console) artifact(w http.ResponseWriter, r *http.Request) {
	req, ok := c.begin(w, r)
	if !ok {
		return
	}
	o := ownerOf(r)
	name := r.PathValue("name")
	path := o.api() + "/sessions/" + url.PathEscape(r.PathValue("id")) + "/artifacts/" + url.PathEscape(name)
	if v := r.URL.Query().Get("version"); v != "" {
		path += "?version=" + url.QueryEscape(v)
	}
	rec := c.send(req, "GET", path, nil)
	if rec.status != http.StatusOK {
		c.fail(req, rec.status, rec.body.Bytes())
		return
	}
	mime := strings.TrimSpace(strings.Split(rec.header.Get("Content-Type"), ";")[0])
	h := w.Header()
	h.Set("Content-Security-Policy", "sandbox; default-src 'none'; img-src 'self'")
	switch {
	case artifacts.InlineImage(mime) && r.URL.Query().Get("download") == "":
		h.Set("Content-Type", mime)
	case (strings.HasPrefix(mime, "text/") || mime == "application/json") && r.URL.Query().Get("download") == "":
		h.Set("Content-Type", "text/plain; charset=utf-8")
	default:
		h.Set("Content-Type", "application/octet-stream")
		h.Set("Content-Disposition", "attachment; filename*=UTF-8''"+url.PathEscape(name))
	}
	w.Write(rec.body.Bytes())
}

type indexView struct {
	Type    string `json:"type"`
	Store   string `json:"store"`
	Lag     *int64 `json:"lag"`
	Error   string `json:"error"`
	Rebuild struct {
		State    string         `json:"state"`
		Progress index.Progress `json:"progress"`
		Error    string         `json:"error"`
		Finished *time.Time     `json:"finished"`
	} `json:"rebuild"`
}

func (c *Console) indexPage(w http.ResponseWriter, r *http.Request) {
	req, ok := c.begin(w, r)
	if !ok {
		return
	}
	var status indexView
	if !c.get(req, "/v1/index", &status) {
		return
	}
	var extraction extractionView
	if !c.get(req, "/v1/extraction", &extraction) {
		return
	}
	c.render(req, http.StatusOK, "index", map[string]any{"Title": "Index", "Index": status, "Extraction": extraction})
}

// extractionView is GET /v1/extraction's answer.
type extractionView struct {
	Enabled bool   `json:"enabled"`
	Model   string `json:"model"`
	Budget  struct {
		PerHour int `json:"per_hour"`
		PerDay  int `json:"per_day"`
	} `json:"budget"`
	Apps []struct {
		App        string `json:"app"`
		HourTokens int    `json:"hour_tokens"`
		DayTokens  int    `json:"day_tokens"`
	} `json:"apps"`
	Totals map[string]int64 `json:"totals"`
}

func (c *Console) rebuild(w http.ResponseWriter, r *http.Request) {
	req, ok := c.begin(w, r)
	if !ok {
		return
	}
	if status, body := c.call(req, "POST", "/v1/index:rebuild", map[string]any{}); status != http.StatusAccepted {
		c.fail(req, status, body)
		return
	}
	http.Redirect(w, r, "/ui/index", http.StatusSeeOther)
}
