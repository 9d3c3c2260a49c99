package index

import (
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
)

// Tokenizer turns text into search terms. Words are maximal runs of letters,
// digits, marks and underscores in any script, lowercased, so "naïve",
// "Москва", "user_id" and "42" are each one term. Scripts written without
// spaces (Chinese, Japanese, Korean) become single characters plus the
// pairs of neighbours, which is how a word there can be matched without a
// dictionary. With Stem, English words are reduced to their stems and
// common English stop words are dropped.
type Tokenizer struct {
	Stem bool
}

// Tokens returns the terms of text, in order, repeats included.
func (t Tokenizer) Tokens(text string) []string {
	var terms []string
	t.each(text, stem, func(term string) { terms = append(terms, term) })
	return terms
}

// stem is an English word's stem, from stems when it was asked for lately.
func stem(word []byte) string {
	if len(word) > stemmedLongest {
		return english.Stem(string(word), false)
	}
	stems.mu.RLock()
	s, ok := stems.of[string(word)]
	stems.mu.RUnlock()
	if ok {
		return s
	}
	w := string(word)
	s = english.Stem(w, false)
	stems.mu.Lock()
	if len(stems.of) >= stemsKept {
		clear(stems.of)
	}
	stems.of[w] = s
	stems.mu.Unlock()
	return s
}

// stems remembers the stems of the words stemmed lately: the stemmer
// spends about a microsecond a word, and a conversation's words come back
// turn after turn (LongMemEval's 49,902 turns loaded into a keyword index
// in 20.8-24.6 s with it, 26.7-27.2 s without).
var stems = struct {
	mu sync.RWMutex
	of map[string]string
}{of: map[string]string{}}

// stemsKept and stemmedLongest bound stems, whatever the text: 7.8 MB for
// 65,535 words of 16 letters and their stems, a few MB of everyday words,
// none longer than any English word but a few.
const (
	stemsKept      = 1 << 16
	stemmedLongest = 24
)

// each calls emit with the terms of text, in order, repeats included,
// English words stemmed by stem (which may leave a word out by returning
// ""). A word of ASCII letters, most of any English text, costs no
// allocation of its own: stem sees it in each's buffer, and may answer
// from a memo without copying it (a search reads every candidate's words).
func (t Tokenizer) each(text string, stem func(word []byte) string, emit func(term string)) {
	word := make([]byte, 0, 64) // lowercased, UTF-8
	ascii := true
	flush := func() {
		switch {
		case len(word) == 0:
			return
		case ascii:
			t.plain(word, stem, emit)
		default:
			t.mixed(word, stem, emit)
		}
		word, ascii = word[:0], true
	}
	for _, r := range text {
		switch {
		case 'a' <= r && r <= 'z', '0' <= r && r <= '9', r == '_':
			word = append(word, byte(r))
		case 'A' <= r && r <= 'Z':
			word = append(word, byte(r)+'a'-'A')
		case r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)):
			word, ascii = utf8.AppendRune(word, unicode.ToLower(r)), false
		default:
			flush()
		}
	}
	flush()
}

// mixed emits a word with letters beyond ASCII: runs of spaceless scripts
// become their characters and the pairs of neighbours, the rest plain
// words.
func (t Tokenizer) mixed(word []byte, stem func([]byte) string, emit func(string)) {
	runes := []rune(string(word))
	start := 0
	for i := 0; i <= len(runes); i++ {
		if i < len(runes) && !isSpaceless(runes[i]) {
			continue
		}
		if i > start {
			t.plain([]byte(string(runes[start:i])), stem, emit)
		}
		j := i
		for j < len(runes) && isSpaceless(runes[j]) {
			emit(string(runes[j]))
			if j+1 < len(runes) && isSpaceless(runes[j+1]) {
				emit(string(runes[j : j+2]))
			}
			j++
		}
		start, i = j, j
	}
}

func (t Tokenizer) plain(w []byte, stem func([]byte) string, emit func(string)) {
	if !t.Stem || !isASCIILetters(w) {
		emit(string(w))
		return
	}
	if stopWords[string(w)] {
		return
	}
	if s := stem(w); s != "" {
		emit(s)
	}
}

func isSpaceless(r rune) bool {
	if r < 0x0e00 { // below Thai, the first of these scripts: most text, quickly
		return false
	}
	// U+3000–U+30FF holds the kana and marks shared by Japanese scripts, like the long-vowel ー.
	return (r >= 0x3000 && r <= 0x30ff) || unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar)
}

func isASCIILetters(w []byte) bool {
	for _, c := range w {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

var stopWords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an and are as at be but by for from had has have he her his i if in into is it its
		me my of on or our she so than that the their them then there these they this to was we were what when where
		which who will with you your`) {
		m[w] = true
	}
	return m
}()
