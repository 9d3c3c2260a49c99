package index

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSnippet(t *testing.T) {
	long := strings.Repeat("filler words here ", 100) + "the zeppelin lands at dusk " + strings.Repeat("more filler ", 100)
	got := Snippet(long, "When does the Zeppelin land?", 200)
	if !strings.Contains(got, "zeppelin lands at dusk") || !strings.HasPrefix(got, "…") || !strings.HasSuffix(got, "…") {
		t.Errorf("snippet around the match = %q", got)
	}
	if n := utf8.RuneCountInString(got); n > 202 {
		t.Errorf("snippet of %d characters, want at most 200 and two marks", n)
	}
	if got := Snippet(long, "nothing matches", 50); !strings.HasPrefix(got, "filler") || !strings.HasSuffix(got, "…") {
		t.Errorf("snippet with no match = %q, want the start", got)
	}
	if got := Snippet("short", "short", 50); got != "short" {
		t.Errorf("short content = %q", got)
	}
}

// Whatever the content (UTF-8, as stored) and query: valid UTF-8, at most
// n characters and two marks, a part of the content, and the whole of a
// content that fits.
func FuzzSnippet(f *testing.F) {
	f.Add("the zeppelin lands at dusk over the river", "zeppelin", 10)
	f.Add("İstanbul'da kar yağıyor ve İSTANBUL güzel", "istanbul", 8)
	f.Add("日本語のテキストです", "テキスト", 4)
	f.Fuzz(func(t *testing.T, content, query string, n int) {
		n = n%500 + 1
		if n < 1 {
			n += 500
		}
		if !utf8.ValidString(content) {
			t.Skip("n/a: stored content is UTF-8")
		}
		got := Snippet(content, query, n)
		if !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8: %q", got)
		}
		if utf8.RuneCountInString(content) <= n {
			if got != content {
				t.Fatalf("content that fits changed: %q -> %q", content, got)
			}
			return
		}
		if c := utf8.RuneCountInString(got); c > n+2 {
			t.Fatalf("%d characters for n = %d", c, n)
		}
		if core := strings.TrimSuffix(strings.TrimPrefix(got, "…"), "…"); !strings.Contains(content, core) {
			t.Fatalf("%q is not a part of the content", core)
		}
	})
}
