// Package typescript holds the TypeScript types generated from the API's
// OpenAPI document, and the test that keeps them current and compiling.
package typescript

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// hector.d.ts is what openapi-typescript makes of clients/openapi.json
// today, and usage.ts compiles against it with tsc --strict. The tools come
// from npm (scripts/test installs them and sets HECTOR_TEST_NODE_BIN).
// Regenerate: openapi-typescript ../openapi.json -o hector.d.ts
func TestTypesAreCurrentAndCompile(t *testing.T) {
	bin := os.Getenv("HECTOR_TEST_NODE_BIN")
	if bin == "" {
		t.Skip("HECTOR_TEST_NODE_BIN is not set: scripts/test installs openapi-typescript and tsc from npm when it can")
	}
	fresh := filepath.Join(t.TempDir(), "hector.d.ts")
	if out, err := exec.Command(filepath.Join(bin, "openapi-typescript"), "../openapi.json", "-o", fresh).CombinedOutput(); err != nil {
		t.Fatalf("openapi-typescript: %v\n%s", err, out)
	}
	want, _ := os.ReadFile(fresh)
	got, err := os.ReadFile("hector.d.ts")
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("hector.d.ts is not what openapi-typescript makes of ../openapi.json: regenerate it (%v)", err)
	}
	if out, err := exec.Command(filepath.Join(bin, "tsc"), "-p", ".").CombinedOutput(); err != nil {
		t.Errorf("tsc: %v\n%s", err, out)
	}
}
