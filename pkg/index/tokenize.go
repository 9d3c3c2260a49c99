package index

import (
	"strings"
	"unicode"

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
func (t Tokenizer) Tokens(text string) []string { return t.tokens(text, stem) }

// stem is an English word's stem.
func stem(word string) string { return english.Stem(word, false) }

// tokens returns the terms of text, English words stemmed by stem (which
// may leave a word out by returning "").
func (t Tokenizer) tokens(text string, stem func(word string) string) []string {
	var terms []string
	word := make([]rune, 0, 32)
	flush := func() {
		if len(word) > 0 {
			terms = t.appendWord(terms, word, stem)
			word = word[:0]
		}
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

func (t Tokenizer) appendWord(terms []string, word []rune, stem func(string) string) []string {
	// Split out runs of spaceless scripts, which form their own terms.
	start := 0
	for i := 0; i <= len(word); i++ {
		if i < len(word) && !isSpaceless(word[i]) {
			continue
		}
		if i > start {
			terms = t.appendPlain(terms, string(word[start:i]), stem)
		}
		j := i
		for j < len(word) && isSpaceless(word[j]) {
			terms = append(terms, string(word[j]))
			if j+1 < len(word) && isSpaceless(word[j+1]) {
				terms = append(terms, string(word[j:j+2]))
			}
			j++
		}
		start, i = j, j
	}
	return terms
}

func (t Tokenizer) appendPlain(terms []string, w string, stem func(string) string) []string {
	if !t.Stem || !isASCIILetters(w) {
		return append(terms, w)
	}
	if stopWords[w] {
		return terms
	}
	if s := stem(w); s != "" {
		terms = append(terms, s)
	}
	return terms
}

func isSpaceless(r rune) bool {
	if r < 0x0e00 { // below Thai, the first of these scripts: most text, quickly
		return false
	}
	// U+3000–U+30FF holds the kana and marks shared by Japanese scripts, like the long-vowel ー.
	return (r >= 0x3000 && r <= 0x30ff) || unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul, unicode.Thai, unicode.Lao, unicode.Khmer, unicode.Myanmar)
}

func isASCIILetters(w string) bool {
	return strings.IndexFunc(w, func(r rune) bool { return r < 'a' || r > 'z' }) < 0
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
