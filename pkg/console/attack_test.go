package console_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/hectormem/hector/pkg/server/servertest"
)

// authOff runs the zero-config shape: auth off, on loopback.
func authOff(t *testing.T) *httptest.Server {
	return servertest.Start(t, fmt.Sprintf("server:\n  data_dir: %s\n  sessions: {backend: inmemory}\n  artifacts: {backend: inmemory}\n  facts: {backend: inmemory}\n  index: {type: keyword, persist: false}\n", t.TempDir()))
}

// call sends a JSON request to the API as a client that is not a browser.
func call(t *testing.T, method, url string, body any) (int, string) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		rd = bytes.NewReader(raw)
	}
	req, _ := http.NewRequest(method, url, rd)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// A page on another site, opened in a real browser, cannot write to a
// server with auth off: not with fetch's CORS-simple requests (text/plain,
// no preflight), not with a form. Before, it planted an event and a fact
// and forgot every fact.
func TestCrossSitePageCannotWrite(t *testing.T) {
	hs := authOff(t)
	alice := hs.URL + "/v1/apps/a/users/alice"
	call(t, "POST", alice+"/sessions", map[string]any{"session_id": "s"})
	if code, body := call(t, "POST", alice+"/facts", map[string]any{"key": "keep", "value": "a fact alice keeps"}); code != 201 {
		t.Fatalf("storing a fact: %d %s", code, body)
	}

	page := `<!doctype html><title>cat pictures</title>
<iframe name="sink" id="sink"></iframe>
<form id="f" method="POST" enctype="text/plain" target="sink" action="API/facts:forget"><input name='{"selector":"all","x":"' value='"}'></form>
<script>
const api = "API";
const simple = body => ({method: "POST", mode: "no-cors", headers: {"Content-Type": "text/plain"}, body});
(async () => {
  await fetch(api + "/sessions/s/events", simple('{"author":"user","message":{"role":"user","parts":[{"type":"text","text":"planted"}]}}')).catch(() => {});
  await fetch(api + "/facts", simple('{"key":"planted","value":"from another site"}')).catch(() => {});
  await fetch(api + "/facts:forget", simple('{"selector":"all"}')).catch(() => {});
  await fetch(api + "/sessions", {method: "POST", mode: "no-cors"}).catch(() => {});
  await new Promise(done => { document.getElementById("sink").onload = done; document.getElementById("f").submit(); });
  document.title = "done";
})();
</script>`
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, strings.ReplaceAll(page, "API", alice))
	}))
	defer evil.Close()
	// localhost is another site than 127.0.0.1, the API's.
	evilURL := strings.Replace(evil.URL, "127.0.0.1", "localhost", 1)

	b := newBrowser(t, screenshotDir(t))
	b.run(chromedp.Navigate(evilURL), chromedp.Poll(`document.title === "done"`, nil))

	_, body := call(t, "GET", alice+"/sessions/s", nil)
	if strings.Contains(body, "planted") {
		t.Errorf("the page appended an event: %s", body)
	}
	_, body = call(t, "GET", alice+"/facts", nil)
	if strings.Contains(body, "planted") || !strings.Contains(body, "a fact alice keeps") {
		t.Errorf("the page changed alice's facts: %s", body)
	}
	_, body = call(t, "GET", alice+"/sessions", nil)
	var list struct{ Sessions []any }
	json.Unmarshal([]byte(body), &list)
	if len(list.Sessions) != 1 {
		t.Errorf("the page created a session: %s", body)
	}
}

// An uploaded HTML page or SVG, opened from the API in a real browser,
// does not run its script on the API's origin. Before, with auth off, it
// could call the API as the user.
func TestArtifactsDoNotRunOnTheAPIOrigin(t *testing.T) {
	hs := authOff(t)
	alice := hs.URL + "/v1/apps/a/users/alice"
	call(t, "POST", alice+"/sessions", map[string]any{"session_id": "s"})
	// A synchronous request: done before the page's load event, if it runs at all.
	steal := `var x = new XMLHttpRequest(); x.open("POST", "/v1/apps/a/users/alice/facts", false);
x.setRequestHeader("Content-Type", "application/json"); x.send(JSON.stringify({key: "KEY", value: "written by an uploaded file"}));`
	uploads := map[string][2]string{
		"page.html":   {"text/html", "<!doctype html><script>" + strings.ReplaceAll(steal, "KEY", "html") + "</script>"},
		"image.svg":   {"image/svg+xml", `<svg xmlns="http://www.w3.org/2000/svg"><script>` + strings.ReplaceAll(steal, "KEY", "svg") + `</script></svg>`},
		"sniffed.txt": {"text/plain", "<!doctype html><script>" + strings.ReplaceAll(steal, "KEY", "sniffed") + "</script>"},
	}
	b := newBrowser(t, screenshotDir(t))
	for name, up := range uploads {
		req, _ := http.NewRequest("PUT", alice+"/sessions/s/artifacts/"+name, strings.NewReader(up[1]))
		req.Header.Set("Content-Type", up[0])
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 201 {
			t.Fatalf("upload %s: %v %v", name, err, resp.Status)
		}
		resp.Body.Close()
		// A download aborts the navigation; a page shown loads. Either way
		// the browser is done with it when Navigate returns.
		chromedp.Run(b.ctx, chromedp.Navigate(alice+"/sessions/s/artifacts/"+name))
	}
	if _, body := call(t, "GET", alice+"/facts", nil); strings.Contains(body, "written by an uploaded file") {
		t.Errorf("an uploaded file ran its script on the API's origin: %s", body)
	}
	// API clients still get each file's own type.
	for name, up := range uploads {
		resp, err := http.Get(alice + "/sessions/s/artifacts/" + name)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Content-Type"); !strings.HasPrefix(got, up[0]) || resp.Header.Get("X-Content-Type-Options") != "nosniff" ||
			!strings.Contains(resp.Header.Get("Content-Security-Policy"), "sandbox") {
			t.Errorf("%s served as %q with %v", name, got, resp.Header)
		}
		if attachment := strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment"); attachment != (up[0] != "text/plain") {
			t.Errorf("%s: Content-Disposition %q", name, resp.Header.Get("Content-Disposition"))
		}
	}
}
