package console_test

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/hectormem/hector/pkg/server/servertest"
)

const (
	adminKey = "console-admin-key-0123"
	aliceKey = "console-alice-key-0123"
	bobKey   = "console-bob-key-012345"
)

// newServer runs a server with auth on, on in-memory stores, seeded with
// alice's and bob's memory.
func newServer(t *testing.T) *httptest.Server {
	t.Helper()
	hs := servertest.Start(t, fmt.Sprintf(`
server:
  data_dir: %s
  sessions: {backend: inmemory}
  artifacts: {backend: inmemory}
  facts: {backend: inmemory}
  index: {type: keyword, persist: false}
  limits: {requests_per_second: 1000, burst: 10000}
  auth:
    api_keys:
      - {name: ops, key: %s, role: admin}
      - {name: alice, key: %s, role: user, app: a, user: alice}
      - {name: bob, key: %s, role: user, app: a, user: bob}
`, t.TempDir(), adminKey, aliceKey, bobKey))
	api := func(method, path string, body any) {
		t.Helper()
		raw, _ := json.Marshal(body)
		if s, ok := body.(string); ok {
			raw = []byte(s)
		}
		req, _ := http.NewRequest(method, hs.URL+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+adminKey)
		if method != "PUT" { // a PUT's body is an artifact's content
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %v %v", method, path, err, resp.Status)
		}
		resp.Body.Close()
	}
	text := func(role, author, s string) map[string]any {
		return map[string]any{"author": author, "message": map[string]any{"role": role, "parts": []any{map[string]any{"type": "text", "text": s}}}}
	}
	alice := "/v1/apps/a/users/alice/sessions"
	api("POST", alice, map[string]any{"session_id": "trip", "state": map[string]any{"user:name": "Alice"}})
	api("POST", alice+"/trip/events", text("user", "user", "I am planning a trip to Lisbon in May"))
	api("POST", alice+"/trip/events", map[string]any{"author": "assistant", "message": map[string]any{"role": "assistant", "parts": []any{
		map[string]any{"type": "tool_call", "tool_call": map[string]any{"id": "call-1", "name": "weather", "arguments": map[string]any{"city": "Lisbon"}}}}}})
	api("POST", alice+"/trip/events", map[string]any{"author": "weather", "message": map[string]any{"role": "tool", "parts": []any{
		map[string]any{"type": "tool_result", "tool_result": map[string]any{"call_id": "call-1", "name": "weather", "content": "sunny, 24°C"}}}}})
	api("POST", alice+"/trip/events", text("assistant", "assistant", "Lisbon will be sunny. 里斯本五月阳光明媚。"+strings.Repeat("averyveryverylongwordwithoutanyspaces", 8)))
	api("POST", alice+"/trip/events", text("user", "user", "<script>alert(1)</script> is not code here"))
	api("PUT", alice+"/trip/artifacts/plan.txt", "Day 1: Alfama")
	api("PUT", alice+"/trip/artifacts/dot.png", string(onePixelPNG))
	// A long session, with a huge message: paged, and clipped.
	api("POST", alice, map[string]any{"session_id": "long", "title": "A long talk"})
	for i := range 130 {
		body := fmt.Sprintf("message %d", i)
		if i == 129 {
			body = "the huge one " + strings.Repeat("lorem ipsum ", 20000)
		}
		api("POST", alice+"/long/events", text("user", "user", body))
	}
	api("POST", "/v1/apps/a/users/bob/sessions", map[string]any{"session_id": "bobs"})
	api("POST", "/v1/apps/a/users/bob/sessions/bobs/events", text("user", "user", "bob's secret plan: Porto"))
	// dana has facts and no session.
	api("POST", "/v1/apps/a/users/dana/facts", map[string]any{"key": "team", "value": "Works on payments"})
	return hs
}

func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Skip("no Chromium on this machine: .ci/run installs Debian's chromium package")
	return ""
}

// browser is a headless Chromium whose JavaScript errors and dialogs fail
// the test, saving a screenshot of each page it is asked to.
type browser struct {
	t     *testing.T
	ctx   context.Context
	shots string
	mu    sync.Mutex
	errs  []string
}

func newBrowser(t *testing.T, shots string) *browser {
	// Its profile and its temporary files in the test's own directory,
	// which the test removes: nothing is left in /tmp.
	tmp := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium(t)), chromedp.NoSandbox, chromedp.WindowSize(1280, 900),
		chromedp.UserDataDir(filepath.Join(tmp, "profile")), chromedp.Env("TMPDIR="+tmp))
	alloc, stopAllocator := chromedp.NewExecAllocator(context.Background(), opts...)
	browserCtx, stopBrowser := chromedp.NewContext(alloc)
	ctx, cancel := context.WithTimeout(browserCtx, 2*time.Minute)
	// Closed as a person would close it, then waited for, before the
	// test's directory (its profile) is removed: killed, it would still be
	// writing there.
	t.Cleanup(func() {
		if err := chromedp.Cancel(ctx); err != nil {
			t.Logf("closing the browser: %v", err)
		}
		cancel()
		stopBrowser()
		stopAllocator()
	})
	// The first Run starts the browser, bound to the context it is given:
	// this one, not the shorter ones of each step.
	if err := chromedp.Run(ctx); err != nil {
		t.Fatal(err)
	}
	b := &browser{t: t, ctx: ctx, shots: shots}
	chromedp.ListenTarget(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.APITypeError {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				b.errs = append(b.errs, "console error: "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			b.errs = append(b.errs, "exception: "+ev.ExceptionDetails.Text+" "+ev.ExceptionDetails.Error())
		case *page.EventJavascriptDialogOpening:
			b.errs = append(b.errs, "a dialog opened: "+ev.Message)
			go chromedp.Run(ctx, page.HandleJavaScriptDialog(true))
		}
	})
	t.Cleanup(func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		for _, e := range b.errs {
			t.Errorf("in the browser: %s", e)
		}
	})
	return b
}

func (b *browser) run(actions ...chromedp.Action) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 20*time.Second)
	defer cancel()
	if err := chromedp.Run(ctx, actions...); err != nil {
		var png []byte
		if chromedp.Run(b.ctx, chromedp.FullScreenshot(&png, 100)) == nil {
			os.WriteFile(filepath.Join(b.shots, "failure.png"), png, 0o644)
		}
		var html string
		chromedp.Run(b.ctx, chromedp.OuterHTML("main", &html, chromedp.ByQuery))
		b.t.Fatalf("%v (the page is in failure.png; its main: %.2000s)", err, html)
	}
}

func (b *browser) screenshot(name string) {
	b.t.Helper()
	var png []byte
	b.run(chromedp.FullScreenshot(&png, 100))
	if err := os.WriteFile(filepath.Join(b.shots, name+".png"), png, 0o644); err != nil {
		b.t.Fatal(err)
	}
}

func (b *browser) text(sel string) string {
	b.t.Helper()
	var s string
	b.run(chromedp.Text(sel, &s, chromedp.ByQuery))
	return s
}

// download clicks the link sel, as a person would, and returns the file
// the browser saved.
func (b *browser) download(sel string) []byte {
	b.t.Helper()
	dir := b.t.TempDir()
	done := make(chan string, 1)
	ctx, stop := context.WithCancel(b.ctx)
	defer stop()
	chromedp.ListenBrowser(ctx, func(ev any) {
		if ev, ok := ev.(*cdpbrowser.EventDownloadProgress); ok && ev.State == cdpbrowser.DownloadProgressStateCompleted {
			select {
			case done <- ev.GUID:
			default:
			}
		}
	})
	allow := chromedp.ActionFunc(func(ctx context.Context) error { // a browser's setting, not a page's
		return cdpbrowser.SetDownloadBehavior(cdpbrowser.SetDownloadBehaviorBehaviorAllowAndName).WithDownloadPath(dir).WithEventsEnabled(true).
			Do(cdp.WithExecutor(ctx, chromedp.FromContext(ctx).Browser))
	})
	b.run(allow, chromedp.Click(sel, chromedp.ByQuery))
	select {
	case guid := <-done:
		got, err := os.ReadFile(filepath.Join(dir, guid))
		if err != nil {
			b.t.Fatal(err)
		}
		return got
	case <-time.After(20 * time.Second):
		var loc string
		chromedp.Run(b.ctx, chromedp.Location(&loc))
		b.t.Fatalf("clicking %s downloaded nothing in 20 s; the browser is at %s", sel, loc)
		return nil
	}
}

func (b *browser) signIn(base, key string) {
	b.t.Helper()
	b.run(chromedp.Navigate(base+"/ui/"), chromedp.WaitVisible("#credential", chromedp.ByQuery),
		chromedp.SendKeys("#credential", key, chromedp.ByQuery), chromedp.Click(`form[action="/ui/signin"] button`, chromedp.ByQuery),
		chromedp.WaitVisible("header .who", chromedp.ByQuery))
}

func screenshotDir(t *testing.T) string {
	dir := os.Getenv("HECTOR_SCREENSHOTS") // to keep them
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshots of each page: %s", dir)
	return dir
}

func TestBrowser(t *testing.T) {
	hs := newServer(t)
	shots := screenshotDir(t)
	b := newBrowser(t, shots)

	// Sign in as alice: a user credential lands on its own sessions.
	b.signIn(hs.URL, aliceKey)
	b.run(chromedp.WaitVisible(`a[href="/ui/apps/a/users/alice/sessions/trip"]`, chromedp.ByQuery))
	b.screenshot("sessions")

	// The session's events, in order, with the tool call answered and the
	// script shown as text.
	b.run(chromedp.Click(`a[href="/ui/apps/a/users/alice/sessions/trip"]`, chromedp.ByQuery), chromedp.WaitVisible("ol.timeline", chromedp.ByQuery))
	var seqs []string
	b.run(chromedp.Evaluate(`[...document.querySelectorAll(".event .seq")].map(e => e.textContent)`, &seqs))
	if strings.Join(seqs, " ") != "#1 #2 #3 #4 #5" {
		t.Errorf("events shown as %q, want #1 to #5 in order", seqs)
	}
	if got := b.text(".event.role-assistant .tool.call .answer"); !strings.Contains(got, "sunny, 24°C") {
		t.Errorf("the tool call's answer: %q", got)
	}
	if got := b.text("#event-" + lastEventID(t, hs, "trip") + " .text"); !strings.Contains(got, "<script>alert(1)</script>") {
		t.Errorf("the event with markup shows %q, want it as text", got)
	}
	var scripts int
	b.run(chromedp.Evaluate(`document.querySelectorAll("main script").length`, &scripts))
	if scripts != 0 {
		t.Errorf("an event's text became %d script elements", scripts)
	}
	if got := b.text("ul.artifacts pre.preview"); got != "Day 1: Alfama" {
		t.Errorf("the text artifact's preview: %q", got)
	}
	var width int
	b.run(chromedp.Evaluate(`document.querySelector('ul.artifacts img').naturalWidth`, &width))
	if width != 1 {
		t.Errorf("the image artifact's preview is %d pixels wide, want it loaded (1)", width)
	}
	if got := b.download(`ul.artifacts a[href*="dot.png"]`); !bytes.Equal(got, onePixelPNG) {
		t.Errorf("the image artifact's download link gave %d bytes, want the PNG's %d", len(got), len(onePixelPNG))
	}
	b.screenshot("session")

	// Working memory: buffer_window of 2 keeps the last two events.
	b.run(chromedp.SetValue(`select[name="strategy"]`, "buffer_window", chromedp.ByQuery), chromedp.SetValue(`input[name="budget"]`, "2", chromedp.ByQuery),
		chromedp.Click(`#wm ~ form button`, chromedp.ByQuery), chromedp.WaitVisible("#preview table.kept", chromedp.ByQuery))
	var kept []string
	b.run(chromedp.Evaluate(`[...document.querySelectorAll("#preview tbody tr td:first-child")].map(e => e.textContent)`, &kept))
	if strings.Join(kept, " ") != "4 5" || !strings.Contains(b.text("#preview .meta"), "keeps 2 of 5 events") {
		t.Errorf("buffer_window 2 keeps %q (%s)", kept, b.text("#preview .meta"))
	}
	b.screenshot("working-memory")
	if err := os.MkdirAll("../../docs", 0o755); err == nil && os.Getenv("HECTOR_UPDATE_README_SHOT") != "" {
		var png []byte
		b.run(chromedp.FullScreenshot(&png, 100))
		os.WriteFile("../../docs/console-session.png", png, 0o644)
	}

	// Search, then open a result.
	b.run(chromedp.Navigate(hs.URL+"/ui/apps/a/users/alice/search"), chromedp.SendKeys("#q", "Lisbon sunny", chromedp.ByQuery),
		chromedp.Click(`form[role="search"] button`, chromedp.ByQuery), chromedp.WaitVisible("ol.results a.hit", chromedp.ByQuery))
	b.screenshot("search")
	b.run(chromedp.Click("ol.results a.hit", chromedp.ByQuery), chromedp.WaitVisible("ol.timeline", chromedp.ByQuery))
	var location string
	b.run(chromedp.Location(&location))
	if !strings.Contains(location, "/ui/apps/a/users/alice/sessions/trip#event-") {
		t.Errorf("the search result opened %s", location)
	}

	// Facts, typed and sent with the button as a person does (through
	// htmx): one stored, one refused with the rule's code, one refused as
	// a secret, the form keeping what was typed.
	b.run(chromedp.Navigate(hs.URL+"/ui/apps/a/users/alice/facts"), chromedp.SendKeys(`form.card input[name="key"]`, "editor", chromedp.ByQuery),
		chromedp.SendKeys(`form.card textarea[name="value"]`, "vim", chromedp.ByQuery), chromedp.Click(`form.card button`, chromedp.ByQuery),
		chromedp.WaitVisible(`//td[code[text()="editor"]]`))
	b.run(chromedp.SendKeys(`form.card input[name="key"]`, "k", chromedp.ByQuery), chromedp.SendKeys(`form.card textarea[name="value"]`, "v", chromedp.ByQuery),
		chromedp.SendKeys(`form.card input[name="category"]`, "system", chromedp.ByQuery), chromedp.Click(`form.card button`, chromedp.ByQuery),
		chromedp.WaitVisible(`form.card .error`, chromedp.ByQuery))
	if got := b.text("form.card .error"); !strings.Contains(got, "category_reserved") {
		t.Errorf("the refused fact says %q", got)
	}
	b.run(chromedp.Navigate(hs.URL+"/ui/apps/a/users/alice/facts"), chromedp.SendKeys(`form.card input[name="key"]`, "aws", chromedp.ByQuery),
		chromedp.SendKeys(`form.card textarea[name="value"]`, "AKIAIOSFODNN7EXAMPLE", chromedp.ByQuery), chromedp.Click(`form.card button`, chromedp.ByQuery),
		chromedp.WaitVisible(`form.card .error`, chromedp.ByQuery))
	var typed string
	b.run(chromedp.Value(`form.card input[name="key"]`, &typed, chromedp.ByQuery))
	if got := b.text("form.card .error"); !strings.Contains(got, "Refused") || typed != "aws" {
		t.Errorf("a fact that looks like a secret: the page says %q, the key field holds %q", got, typed)
	}
	// A new value for the key: the list says who wrote it and links to
	// its history, which a click opens, showing both values, newest first.
	b.run(chromedp.Navigate(hs.URL+"/ui/apps/a/users/alice/facts"), chromedp.SendKeys(`form.card input[name="key"]`, "editor", chromedp.ByQuery),
		chromedp.SendKeys(`form.card textarea[name="value"]`, "helix", chromedp.ByQuery), chromedp.Click(`form.card button`, chromedp.ByQuery),
		chromedp.WaitVisible(`//td[text()="helix"]`))
	if got := b.text(`tbody tr`); !strings.Contains(got, "written by") {
		t.Errorf("the fact's row says %q, want who wrote it", got)
	}
	b.run(chromedp.Click(`//a[text()="history"]`), chromedp.WaitVisible(`table.history`, chromedp.ByQuery))
	var rows []string
	b.run(chromedp.Evaluate(`[...document.querySelectorAll("table.history tbody tr")].map(r => r.innerText)`, &rows))
	if len(rows) != 2 || !strings.Contains(rows[0], "helix") || !strings.Contains(rows[0], "now") || !strings.Contains(rows[1], "vim") || !strings.Contains(rows[1], "replaced") {
		t.Errorf("the history page shows %q", rows)
	}
	b.screenshot("fact-history")
	b.run(chromedp.Navigate(hs.URL + "/ui/apps/a/users/alice/facts"))
	b.screenshot("facts")
	// A search shows the facts that match above the past messages.
	b.run(chromedp.Navigate(hs.URL+"/ui/apps/a/users/alice/search"), chromedp.SendKeys("#q", "which editor", chromedp.ByQuery),
		chromedp.Click(`form[role="search"] button`, chromedp.ByQuery), chromedp.WaitVisible("ul.facts a.hit", chromedp.ByQuery))
	if got := b.text("ul.facts a.hit"); !strings.Contains(got, "editor") || !strings.Contains(got, "helix") {
		t.Errorf("the search shows the fact %q, want editor: helix", got)
	}
	b.run(chromedp.Navigate(hs.URL + "/ui/apps/a/users/alice/state"))
	b.screenshot("state")

	// A wrong key, typed into the sign-in form, says so.
	b.run(chromedp.Click(`header .who button`, chromedp.ByQuery), chromedp.WaitVisible("#credential", chromedp.ByQuery),
		chromedp.SendKeys("#credential", "not-a-key-0123456789", chromedp.ByQuery), chromedp.Click(`form[action="/ui/signin"] button`, chromedp.ByQuery),
		chromedp.WaitVisible(`form[action="/ui/signin"] .error`, chromedp.ByQuery))
	if got := b.text(`form[action="/ui/signin"] .error`); !strings.Contains(got, "not accepted") {
		t.Errorf("a wrong key: the sign-in page says %q", got)
	}

	// The index, as an admin: a rebuild runs and finishes.
	b.signIn(hs.URL, adminKey)
	b.run(chromedp.Navigate(hs.URL+"/ui/index"), chromedp.Click(`#rebuild button`, chromedp.ByQuery),
		chromedp.WaitVisible(`#rebuild .status.state-done`, chromedp.ByQuery))
	b.screenshot("index")
	// The users: those with facts only are there too, and lead to them.
	b.run(chromedp.Navigate(hs.URL+"/ui/"), chromedp.Click(`a[href="/ui/apps/a/users/dana"]`, chromedp.ByQuery),
		chromedp.WaitVisible(`a[href="/ui/apps/a/users/dana/facts"]`, chromedp.ByQuery))
	b.run(chromedp.Navigate(hs.URL + "/ui/"))
	b.screenshot("users")

	// Erasing a user, as an admin: a wrong confirmation is refused; the
	// user's ID typed, the receipt shows every store verified.
	api := func(method, path string, body any) {
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(method, hs.URL+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer "+adminKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %v %v", method, path, resp.Status, err)
		}
		resp.Body.Close()
	}
	api("POST", "/v1/apps/a/users/carol/sessions", map[string]any{"session_id": "c1"})
	api("POST", "/v1/apps/a/users/carol/facts", map[string]any{"key": "hobby", "value": "Carol keeps bees"})
	// A long session: its title heads the page; the huge message is clipped;
	// older events are a click away, a page at a time.
	b.run(chromedp.Navigate(hs.URL+"/ui/apps/a/users/alice"), chromedp.Click(`a[href$="/sessions/long"]`, chromedp.ByQuery), chromedp.WaitVisible("ol.timeline", chromedp.ByQuery))
	if got := b.text("h1"); !strings.HasPrefix(got, "A long talk") {
		t.Errorf("the long session's heading: %q", got)
	}
	if got := b.text("ol.timeline li:last-child .clipped"); !strings.Contains(got, "more characters, not shown") {
		t.Errorf("the huge message's note: %q", got)
	}
	var shown int
	b.run(chromedp.Evaluate(`document.querySelectorAll("ol.timeline > li").length`, &shown))
	if shown != 100 {
		t.Errorf("%d events on the first page, want 100", shown)
	}
	b.run(chromedp.Click(`a[href^="?before="]`, chromedp.ByQuery), chromedp.WaitVisible(`#event-`+firstEventID(t, hs, "long"), chromedp.ByQuery))
	b.run(chromedp.Evaluate(`document.querySelectorAll("ol.timeline > li").length`, &shown))
	if shown != 30 {
		t.Errorf("%d events on the older page, want the first 30", shown)
	}

	// Exporting her first: the link downloads her archive.
	b.run(chromedp.Navigate(hs.URL + "/ui/apps/a/users/carol"))
	archive := b.download(`section.export a`)
	tr := tar.NewReader(bytes.NewReader(archive))
	var names []string
	var facts string
	for {
		h, err := tr.Next()
		if err != nil {
			if err != io.EOF {
				t.Errorf("reading the downloaded archive: %v", err)
			}
			break
		}
		names = append(names, h.Name)
		if h.Name == "facts/versions.json" {
			raw, _ := io.ReadAll(tr)
			facts = string(raw)
		}
	}
	if len(names) == 0 || names[0] != "user.jsonl" || names[len(names)-1] != "end.json" || !strings.Contains(facts, "Carol keeps bees") {
		t.Errorf("the downloaded archive holds %q, and facts %.300s", names, facts)
	}
	// The form's label is one line, its words and the user's ID together
	// (it wrapped over three: finding 11 of issue 71).
	var lines float64
	b.run(chromedp.Navigate(hs.URL+"/ui/apps/a/users/carol"), chromedp.Evaluate(`(() => {
		const label = document.querySelector('section.erase label span');
		return label.getBoundingClientRect().height / parseFloat(getComputedStyle(label).lineHeight || '20');
	})()`, &lines))
	if lines == 0 || lines > 1.5 {
		t.Errorf("the erase form's label takes %.1f lines, want one", lines)
	}
	b.run(chromedp.SendKeys(`section.erase input[name="confirm"]`, "alice", chromedp.ByQuery),
		chromedp.Click(`section.erase button`, chromedp.ByQuery), chromedp.WaitVisible(`section.erase .error`, chromedp.ByQuery))
	if got := b.text("section.erase .error"); !strings.Contains(got, "carol") {
		t.Errorf("a wrong confirmation says %q", got)
	}
	b.run(chromedp.SendKeys(`section.erase input[name="confirm"]`, "carol", chromedp.ByQuery), chromedp.Click(`section.erase button`, chromedp.ByQuery),
		chromedp.WaitVisible(`table.receipt`, chromedp.ByQuery))
	if got := b.text(".status"); !strings.Contains(got, "Verified") {
		t.Errorf("the receipt says %q", got)
	}
	b.screenshot("erased")

	// A phone-width screen: nothing wider than the viewport.
	var overflow bool
	b.run(chromedp.EmulateViewport(390, 844), chromedp.Navigate(hs.URL+"/ui/apps/a/users/alice/sessions/trip"), chromedp.WaitVisible("ol.timeline", chromedp.ByQuery),
		chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth`, &overflow))
	if overflow {
		t.Error("the session page is wider than a phone's screen")
	}
	// The working-memory preview on a phone breaks no author's name in two.
	var broken []string
	b.run(chromedp.SetValue(`select[name="strategy"]`, "buffer_window", chromedp.ByQuery), chromedp.SetValue(`input[name="budget"]`, "5", chromedp.ByQuery),
		chromedp.Click(`#wm ~ form button`, chromedp.ByQuery), chromedp.WaitVisible("#preview table.kept", chromedp.ByQuery),
		chromedp.Evaluate(`[...document.querySelectorAll("#preview tbody td:nth-child(2)")].filter(td => {
			const r = document.createRange(); r.selectNodeContents(td); return r.getClientRects().length > 1;
		}).map(td => td.textContent)`, &broken))
	if len(broken) > 0 {
		t.Errorf("on a phone the preview breaks these authors across lines: %q", broken)
	}
	b.screenshot("session-phone")

	// Signed in as bob, alice's pages refuse, and nothing of hers shows.
	b.run(chromedp.EmulateViewport(1280, 900), chromedp.Navigate(hs.URL+"/ui/"), chromedp.Click(`header .who button`, chromedp.ByQuery), chromedp.WaitVisible("#credential", chromedp.ByQuery))
	b.signIn(hs.URL, bobKey)
	for _, page := range []string{"/ui/apps/a/users/alice/sessions/trip", "/ui/apps/a/users/alice/search?q=Lisbon", "/ui/apps/a/users/alice/facts"} {
		var body string
		b.run(chromedp.Navigate(hs.URL+page), chromedp.WaitVisible("main h1", chromedp.ByQuery), chromedp.Text("body", &body, chromedp.ByQuery))
		if !strings.Contains(body, "Forbidden") || strings.Contains(body, "Lisbon") || strings.Contains(body, "editor") {
			t.Errorf("bob at %s sees: %.300s", page, body)
		}
	}
	b.screenshot("forbidden")
}

func lastEventID(t *testing.T, hs *httptest.Server, session string) string {
	return eventID(t, hs, session, "recent=1")
}

// firstEventID is the ID of a session's first event.
func firstEventID(t *testing.T, hs *httptest.Server, session string) string {
	return eventID(t, hs, session, "recent=1&before_seq=2")
}

// eventID is the ID of the event of alice's session that query selects.
func eventID(t *testing.T, hs *httptest.Server, session, query string) string {
	req, _ := http.NewRequest("GET", hs.URL+"/v1/apps/a/users/alice/sessions/"+session+"?"+query, nil)
	req.Header.Set("Authorization", "Bearer "+adminKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s struct{ Events []struct{ ID string } }
	json.NewDecoder(resp.Body).Decode(&s)
	return s.Events[0].ID
}

// signedIn is an HTTP client with the console cookies of a sign-in as key.
func signedIn(t *testing.T, hs *httptest.Server, key string) (*http.Client, *http.Response) {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.PostForm(hs.URL+"/ui/signin", url.Values{"credential": {key}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return c, resp
}

// Signed in as bob, alice's pages answer 403 and show nothing of hers.
func TestIsolation(t *testing.T) {
	hs := newServer(t)
	bob, _ := signedIn(t, hs, bobKey)
	for _, page := range []string{"", "/sessions/trip", "/search?q=Lisbon", "/facts", "/facts/history?key=editor", "/state", "/sessions/trip/artifacts/plan.txt"} {
		resp, err := bob.Get(hs.URL + "/ui/apps/a/users/alice" + page)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden || strings.Contains(string(body), "Lisbon") || strings.Contains(string(body), "Alfama") {
			t.Errorf("bob GET alice%s: %s", page, resp.Status)
		}
	}
	for _, page := range []string{"/ui/", "/ui/index"} {
		resp, _ := bob.Get(hs.URL + page)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(string(body), "alice") {
			t.Errorf("bob's %s mentions alice (%s)", page, resp.Status)
		}
	}
}

// Forms need the CSRF token; cookies are HttpOnly, SameSite=Strict, and
// limited to the console.
func TestSecurity(t *testing.T) {
	hs := newServer(t)
	alice, resp := signedIn(t, hs, aliceKey)
	var credential *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == "hector_console" {
			credential = c
		}
	}
	if credential == nil || !credential.HttpOnly || credential.SameSite != http.SameSiteStrictMode || credential.Path != "/ui" {
		t.Fatalf("the sign-in cookie: %+v", credential)
	}
	facts := hs.URL + "/ui/apps/a/users/alice/facts"
	if resp, _ := alice.Get(facts); resp.StatusCode != 200 { // gets a CSRF nonce
		t.Fatalf("facts page: %s", resp.Status)
	}
	resp, err := alice.PostForm(facts, url.Values{"key": {"sneaky"}, "value": {"posted without the token"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a form posted without its CSRF token: %s", resp.Status)
	}
	resp, _ = alice.Get(facts)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(body), "sneaky") {
		t.Error("the fact posted without a token was stored")
	}
	// The token the page carries works.
	token := between(string(body), `name="csrf" value="`, `"`)
	if resp, _ := alice.PostForm(facts, url.Values{"csrf": {token}, "key": {"fine"}, "value": {"with the token"}}); resp.StatusCode != http.StatusSeeOther {
		t.Errorf("a form with its token: %s", resp.Status)
	}
	// Another site's form is refused by the browser's own word.
	req, _ := http.NewRequest("POST", facts, strings.NewReader(url.Values{"csrf": {token}, "key": {"x"}, "value": {"y"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Sec-Fetch-Site", "cross-site")
	if resp, _ := alice.Do(req); resp.StatusCode != http.StatusForbidden {
		t.Errorf("a cross-site form: %s", resp.Status)
	}
	// Without a credential, every page sends to sign-in.
	if resp, _ := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Get(facts); resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/ui/signin" {
		t.Errorf("a page without signing in: %s %s", resp.Status, resp.Header.Get("Location"))
	}
}

func between(s, start, end string) string {
	i := strings.Index(s, start)
	if i < 0 {
		return ""
	}
	s = s[i+len(start):]
	return s[:strings.Index(s, end)]
}

// A 1×1 PNG.
var onePixelPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\xcf\xc0\xf0\x1f\x00\x05\x00\x01\xff\x89\x99=\x1d\x00\x00\x00\x00IEND\xaeB`\x82")

// With auth off (loopback), the console needs no sign-in.
func TestNoSignInWithAuthOff(t *testing.T) {
	hs := servertest.Start(t, fmt.Sprintf("server:\n  data_dir: %s\n  sessions: {backend: inmemory}\n  artifacts: {backend: inmemory}\n  facts: {backend: inmemory}\n  index: {type: keyword, persist: false}\n", t.TempDir()))
	resp, err := http.Get(hs.URL + "/ui/")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "No user has a session or a fact yet") || strings.Contains(string(body), "Sign out") {
		t.Errorf("/ui/ with auth off: %s %.500s", resp.Status, body)
	}
	// The example it gives works as written: this server's address, and a
	// JSON body curl says is JSON.
	if want := "curl " + hs.URL + "/v1/apps/demo/users/alice/sessions --json '{}'"; !strings.Contains(string(body), want) {
		t.Errorf("/ui/'s example is not %q: %.2000s", want, body)
	}
}
