package console_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/hectormem/hector/internal/fakellm"
	"github.com/hectormem/hector/pkg/server/servertest"
)

// The index page says what learning facts from conversations costs each
// app this hour and day, and how to turn it on when it is off.
func TestIndexPageShowsExtraction(t *testing.T) {
	model := fakellm.Start(t, fakellm.Reply{Content: `{"facts": []}`, Usage: [2]int{300, 20}})
	hs := servertest.Start(t, fmt.Sprintf("llms:\n  small: {base_url: %q, model: small-1}\nserver:\n  data_dir: %s\n  sessions: {backend: inmemory}\n"+
		"  artifacts: {backend: inmemory}\n  facts: {backend: inmemory}\n  index: {type: keyword, persist: false}\n"+
		"  extraction: {llm: small, tokens_per_hour: 5000}\n", model.URL, t.TempDir()))
	alice := hs.URL + "/v1/apps/shop/users/alice"
	call(t, "POST", alice+"/sessions", map[string]any{"session_id": "s"})
	call(t, "POST", alice+"/sessions/s/events", map[string]any{"author": "alice", "message": map[string]any{"role": "user",
		"parts": []any{map[string]any{"type": "text", "text": "I live in Lisbon"}}}})
	if code, body := call(t, "POST", alice+"/sessions/s/memories:extract", nil); code != 200 {
		t.Fatalf("extract: %d %s", code, body)
	}
	page := get(t, hs.URL+"/ui/index")
	for _, want := range []string{"small-1", "5000 tokens an hour", "<td>shop</td><td>320 of 5000</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the index page lacks %q", want)
		}
	}
	if off := get(t, authOff(t).URL+"/ui/index"); !strings.Contains(off, "server.extraction.llm") {
		t.Error("with extraction off, the index page does not say how to turn it on")
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	return string(body)
}
