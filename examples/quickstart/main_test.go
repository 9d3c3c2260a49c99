package main

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDocsShowThisProgram keeps docs/sdk.md's example compiling: its
// quickstart block must be this file, to the byte.
func TestDocsShowThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../docs/sdk.md")
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile("(?s)<!-- quickstart: examples/quickstart/main.go -->\n```go\n(.*?)```").FindSubmatch(readme)
	if block == nil {
		t.Fatal("docs/sdk.md has no quickstart block (a ```go block after <!-- quickstart: examples/quickstart/main.go -->)")
	}
	source, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(block[1], source) {
		t.Error("docs/sdk.md's quickstart block differs from examples/quickstart/main.go: copy main.go into it")
	}
}

func TestQuickstartRuns(t *testing.T) {
	t.Setenv("HECTOR_DATA_DIR", t.TempDir())
	for run, want := range []string{"user:visits = 1", "user:visits = 2"} {
		out := captureStdout(t, main)
		if !strings.Contains(out, "has 1 event(s)") || !strings.Contains(out, "#1 user: Hello! I prefer metric units.") || !strings.Contains(out, want) {
			t.Errorf("run %d printed:\n%s\nwant one event and %q", run+1, out, want)
		}
	}
}

func captureStdout(t *testing.T, fn func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	defer func() { os.Stdout = stdout }()
	done := make(chan string)
	go func() {
		b, _ := io.ReadAll(r)
		done <- string(b)
	}()
	fn()
	w.Close()
	return <-done
}
