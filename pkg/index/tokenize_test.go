package index

import (
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

func TestTokens(t *testing.T) {
	for _, tc := range []struct {
		text string
		stem bool
		want []string
	}{
		{"Hello, World!", false, []string{"hello", "world"}},
		{"user_id=42; v2.3 gpt-4o", false, []string{"user_id", "42", "v2", "3", "gpt", "4o"}},
		{"Встреча в Москве", false, []string{"встреча", "в", "москве"}},
		{"naïve café", false, []string{"naïve", "café"}},
		{"東京タワー", false, []string{"東", "東京", "京", "京タ", "タ", "タワ", "ワ", "ワー", "ー"}},
		{"ID番号123", false, []string{"id", "番", "番号", "号", "123"}},
		{"The runners were running to the races", true, []string{"runner", "run", "race"}},
		{"Running UTF-8 Москва", true, []string{"run", "utf", "8", "москва"}},
		{"", false, nil},
		{"  ...  ", false, nil},
	} {
		if got := (Tokenizer{Stem: tc.stem}).Tokens(tc.text); !slices.Equal(got, tc.want) {
			t.Errorf("Tokens(%q, stem=%v) = %q, want %q", tc.text, tc.stem, got, tc.want)
		}
	}
}

func FuzzTokens(f *testing.F) {
	for _, s := range []string{"Hello, World", "東京タワー", "user_id=42", "\xff\xfe", "a\u0301b", "ー"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, text string, stem bool) {
		for _, term := range (Tokenizer{Stem: stem}).Tokens(text) {
			if term == "" || !utf8.ValidString(term) || strings.ContainsAny(term, " \t\n.,;") {
				t.Fatalf("Tokens(%q) produced the term %q", text, term)
			}
		}
	})
}

// Coverage skips stemming words whose first letter begins no query term:
// that holds only if a stem always begins as its word does.
func FuzzStemKeepsTheFirstLetter(f *testing.F) {
	for _, w := range []string{"dying", "skies", "ugly", "yelling", "aardvarks", "generously", "e"} {
		f.Add(w)
	}
	tok := Tokenizer{Stem: true}
	f.Fuzz(func(t *testing.T, w string) {
		if w == "" || !isASCIILetters([]byte(w)) {
			return
		}
		for _, term := range tok.Tokens(w) {
			if term[0] != w[0] {
				t.Fatalf("%q stems to %q", w, term)
			}
		}
	})
}

// FuzzTokensAsReadRuneByRune holds the tokenizer's fast path for ASCII
// words to the rules as first written, one rune at a time (readTokens).
func FuzzTokensAsReadRuneByRune(f *testing.F) {
	for _, s := range []string{"The Runners' café", "東京タワーID番号123", "user_id=42 v2.3", "\xff\xfeA", "a\u0301b ΣΑΣ", "İstanbul"} {
		f.Add(s, true)
	}
	f.Fuzz(func(t *testing.T, text string, stemmed bool) {
		if got, want := (Tokenizer{Stem: stemmed}).Tokens(text), readTokens(text, stemmed); !slices.Equal(got, want) {
			t.Fatalf("Tokens(%q, stem=%v) = %q, read rune by rune %q", text, stemmed, got, want)
		}
	})
}

// readTokens is Tokenizer's rules applied one rune at a time, slowly.
func readTokens(text string, stemmed bool) []string {
	var terms []string
	plain := func(w []rune) {
		s := string(w)
		switch {
		case !stemmed || strings.IndexFunc(s, func(r rune) bool { return r < 'a' || r > 'z' }) >= 0:
			terms = append(terms, s)
		case !stopWords[s] && stem([]byte(s)) != "":
			terms = append(terms, stem([]byte(s)))
		}
	}
	var word []rune
	flush := func() {
		start := 0
		for i, r := range word {
			if isSpaceless(r) {
				if i > start {
					plain(word[start:i])
				}
				terms = append(terms, string(r))
				if i+1 < len(word) && isSpaceless(word[i+1]) {
					terms = append(terms, string(word[i:i+2]))
				}
				start = i + 1
			}
		}
		if start < len(word) {
			plain(word[start:])
		}
		word = word[:0]
	}
	for _, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r) || r == '_' {
			word = append(word, unicode.ToLower(r))
		} else {
			flush()
		}
	}
	flush()
	return terms
}

// Stems come from memory the second time, the same as the stemmer's, and
// the memory stays bounded whatever the words: past stemsKept it starts
// again, and a word longer than any English one is not kept.
func TestStemsAreRememberedWithinBounds(t *testing.T) {
	word := func(i int) []byte {
		w := []byte("running")
		for ; i > 0; i /= 26 {
			w = append(w, byte('a'+i%26))
		}
		return w
	}
	for i := range stemsKept + 100 {
		w := word(i)
		first, again := stem(w), stem(w)
		if want := english.Stem(string(w), false); first != want || again != want {
			t.Fatalf("%s stemmed to %q, then %q; the stemmer says %q", w, first, again, want)
		}
		stems.mu.RLock()
		n := len(stems.of)
		stems.mu.RUnlock()
		if n > stemsKept {
			t.Fatalf("%d stems kept, past the %d bound", n, stemsKept)
		}
	}
	long := []byte(strings.Repeat("a", stemmedLongest) + "ing")
	stem(long)
	stems.mu.RLock()
	_, kept := stems.of[string(long)]
	stems.mu.RUnlock()
	if kept {
		t.Errorf("a word of %d letters was kept", len(long))
	}
}
