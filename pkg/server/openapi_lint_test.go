package server

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// The document the server serves passes Redocly's recommended rules, the
// lint API tools run before they generate from it (OpenAPI 3.0 ignores a
// nullable beside a bare $ref, say, and wants a type beside it). Redocly
// comes from npm, as scripts/test installs it (HECTOR_TEST_NODE_BIN).
func TestTheOpenAPIDocumentLints(t *testing.T) {
	bin := os.Getenv("HECTOR_TEST_NODE_BIN")
	if bin == "" {
		t.Skip("HECTOR_TEST_NODE_BIN is not set: scripts/test installs redocly from npm when it can")
	}
	w := do(t, newTestServer(t, nil), "GET", "/openapi.json", "", nil)
	if w.Code != 200 {
		t.Fatalf("/openapi.json: %d", w.Code)
	}
	doc := filepath.Join(t.TempDir(), "openapi.json")
	if err := os.WriteFile(doc, w.Body.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	lint := exec.Command(filepath.Join(bin, "redocly"), "lint", "--extends=recommended", "--format=codeframe", doc)
	lint.Env = append(os.Environ(), "REDOCLY_TELEMETRY=off", "REDOCLY_SUPPRESS_UPDATE_NOTICE=true")
	if out, err := lint.CombinedOutput(); err != nil {
		t.Errorf("redocly lint of the served document: %v\n%s", err, out)
	}
}
