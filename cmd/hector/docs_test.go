package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// documents are the Markdown files a user reads, relative to this package.
func documents(t *testing.T) map[string]string {
	t.Helper()
	paths, _ := filepath.Glob("../../docs/*.md")
	paths = append(paths, "../../README.md", "../../CONTRIBUTING.md")
	out := map[string]string{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		out[p] = string(raw)
	}
	return out
}

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
	for doc, text := range documents(t) {
		if strings.Contains(text, "shared/") {
			t.Errorf("%s points at a file outside the repository", doc)
		}
	}
}

var (
	link    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading = regexp.MustCompile(`(?m)^#+ (.+)$`)
)

// anchor is the fragment GitHub gives a heading: lower case, spaces to
// hyphens, punctuation but hyphens and underscores dropped.
func anchor(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(h)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Every relative link in the documents names a file of the repository,
// and a heading of it when it names one.
func TestDocsLinksResolve(t *testing.T) {
	for doc, text := range documents(t) {
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			path := doc
			if file != "" {
				path = filepath.Join(filepath.Dir(doc), file)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				if _, serr := os.Stat(path); serr != nil {
					t.Errorf("%s links to %s, which does not exist", doc, target)
				}
				continue
			}
			if frag == "" {
				continue
			}
			found := false
			for _, h := range heading.FindAllStringSubmatch(string(raw), -1) {
				found = found || anchor(h[1]) == frag
			}
			if !found {
				t.Errorf("%s links to %s: %s has no heading with the anchor #%s", doc, target, file, frag)
			}
		}
	}
}

// A command line the documents show (`hector serve --config …`, in code
// spans and shell blocks) names a command hector has, with flags it takes.
func TestDocsCommandsExist(t *testing.T) {
	root := newRoot()
	separators := regexp.MustCompile(`&&|\|\||[;|(]`)
	seen := 0
	for doc, text := range documents(t) {
		for _, code := range codeOf(text) {
			for _, line := range strings.Split(code, "\n") {
				for _, part := range separators.Split(line, -1) {
					fields := strings.Fields(strings.TrimPrefix(strings.TrimSpace(part), "$ "))
					if len(fields) == 0 || fields[0] != "hector" {
						continue
					}
					words := fields[1:]
					cmd := root
					for len(words) > 0 && !strings.HasPrefix(words[0], "-") {
						next, _, err := cmd.Find([]string{words[0]})
						if err != nil || next == cmd {
							break
						}
						cmd, words = next, words[1:]
					}
					if cmd == root {
						if len(words) > 0 && !strings.HasPrefix(words[0], "-") {
							t.Errorf("%s: %q: hector has no command %q", doc, strings.TrimSpace(part), words[0])
						}
						continue
					}
					seen++
					for _, f := range words {
						name, ok := strings.CutPrefix(f, "--")
						if !ok || name == "" {
							continue
						}
						name, _, _ = strings.Cut(name, "=")
						if cmd.Flags().Lookup(name) == nil && cmd.InheritedFlags().Lookup(name) == nil {
							t.Errorf("%s: %q: hector %s has no flag --%s", doc, strings.TrimSpace(part), cmd.Name(), name)
						}
					}
				}
			}
		}
	}
	if seen < 10 {
		t.Errorf("found %d hector command lines in the documents: the pattern no longer sees them", seen)
	}
}

// codeOf returns the code spans and code blocks of a Markdown text.
func codeOf(text string) []string {
	var out []string
	blocks := regexp.MustCompile("(?s)```([a-z]*)\n(.*?)```").FindAllStringSubmatch(text, -1)
	for _, b := range blocks {
		if b[1] == "sh" || b[1] == "bash" || b[1] == "" {
			out = append(out, b[2])
		}
	}
	rest := regexp.MustCompile("(?s)```.*?```").ReplaceAllString(text, "")
	for _, s := range regexp.MustCompile("`([^`\n]+)`").FindAllStringSubmatch(rest, -1) {
		out = append(out, s[1])
	}
	return out
}
