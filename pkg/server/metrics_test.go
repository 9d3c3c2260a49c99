package server

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil/promlint"
)

// /metrics follows Prometheus' conventions: promlint (the linter inside
// promtool check metrics) finds nothing, and so does promtool itself when
// it is installed (.ci/run installs Debian's prometheus package).
func TestMetricsLintClean(t *testing.T) {
	s := newTestServer(t, nil)
	do(t, s, "POST", "/v1/apps/a/users/alice/sessions", adminKey, map[string]any{"session_id": "s"}) // some traffic to report
	do(t, s, "POST", "/v1/apps/a/users/alice/memory:search", adminKey, map[string]any{"query": "x"})
	do(t, s, "GET", "/v1/apps/a/users/alice/sessions/nope", adminKey, nil)
	w := do(t, s, "GET", "/metrics", adminKey, nil)
	if w.Code != 200 {
		t.Fatalf("/metrics: %d", w.Code)
	}
	body := w.Body.Bytes()
	problems, err := promlint.New(bytes.NewReader(body)).Lint()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("promlint: %s: %s", p.Metric, p.Text)
	}
	// Status codes as numbers, so that code=~"5.." selects server errors.
	for _, want := range []string{"hector_http_request_duration_seconds_bucket", "hector_append_duration_seconds", "hector_index_lag_changes",
		"hector_index_skipped_documents_total 0", `code="201"`, `code="404"`} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		t.Log("promtool is not installed: checked with promlint only")
		return
	}
	cmd := exec.Command(promtool, "check", "metrics")
	cmd.Stdin = bytes.NewReader(body)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, out)
	}
}
