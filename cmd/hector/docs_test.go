package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docs/architecture.md maps every package, and no document points at a
// file outside the repository.
func TestDocsMapEveryPackage(t *testing.T) {
	arch, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir("../../pkg", func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if files, _ := filepath.Glob(filepath.Join(path, "*.go")); len(files) > 0 {
			pkg := strings.TrimPrefix(filepath.ToSlash(path), "../../")
			if !strings.Contains(string(arch), "`"+pkg+"`") {
				t.Errorf("docs/architecture.md does not map %s", pkg)
			}
		}
		return nil
	})
	docs, _ := filepath.Glob("../../docs/*.md")
	for _, doc := range append(docs, "../../README.md", "../../CONTRIBUTING.md") {
		raw, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "shared/") {
			t.Errorf("%s points at a file outside the repository", doc)
		}
	}
}
