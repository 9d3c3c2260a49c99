package server

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"
)

// clients/openapi.json, which the generated clients are made from, is the
// document the server serves (at its default address). Regenerate it with
// HECTOR_UPDATE_OPENAPI=1 go test -run TestOpenAPIFileIsCurrent ./pkg/server,
// then go generate ./clients/...
func TestOpenAPIFileIsCurrent(t *testing.T) {
	s := newTestServer(t, nil)
	want, err := json.MarshalIndent(s.openAPIDocument("http://127.0.0.1:8080"), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	want = append(want, '\n')
	const path = "../../clients/openapi.json"
	if os.Getenv("HECTOR_UPDATE_OPENAPI") != "" {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s is not the document the server serves: regenerate it (see this test's comment)", path)
	}
}
