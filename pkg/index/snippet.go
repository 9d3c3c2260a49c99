package index

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Snippet is at most n characters of content, around where a word of
// query first appears in it (from its start when none does), cut at
// spaces where it can and marked with "…" where it was cut. Content of n
// characters or fewer is returned as it is.
func Snippet(content, query string, n int) string {
	runes := []rune(content)
	if n <= 0 || len(runes) <= n {
		return content
	}
	start := 0
	if at := firstWord(runes, query); at > 0 {
		// A quarter of the window before the word, for its context.
		start = min(max(at-n/4, 0), len(runes)-n)
		for i := start; i > 0 && i > start-20; i-- { // back to a word's start, if one is near
			if unicode.IsSpace(runes[i-1]) {
				start = i
				break
			}
		}
	}
	end := min(start+n, len(runes))
	for i := end; end < len(runes) && i > end-20 && i > start; i-- { // back to a word's end, if one is near
		if unicode.IsSpace(runes[i]) {
			end = i
			break
		}
	}
	out := strings.TrimSpace(string(runes[start:end]))
	if start > 0 {
		out = "…" + out
	}
	if end < len(runes) {
		out += "…"
	}
	return out
}

// firstWord is where (in runes) a word of query of 3 letters or more
// first appears in text, ignoring case; -1 when none does.
func firstWord(text []rune, query string) int {
	haystack := strings.ToLower(string(text))
	if utf8.RuneCountInString(haystack) != len(text) { // a letter whose lower case has another length: as it is
		haystack = string(text)
	}
	best := -1
	for _, w := range strings.FieldsFunc(strings.ToLower(query), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) }) {
		if utf8.RuneCountInString(w) < 3 {
			continue
		}
		if at := strings.Index(haystack, w); at >= 0 {
			if at = utf8.RuneCountInString(haystack[:at]); best < 0 || at < best {
				best = at
			}
		}
	}
	return best
}
