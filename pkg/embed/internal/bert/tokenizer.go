package bert

import (
	"strings"
	"unicode"

	unorm "golang.org/x/text/unicode/norm"
)

// tokenizer is BERT's uncased WordPiece tokenizer, as the model's
// tokenizer config asks (do_lower_case, accents stripped, CJK characters
// split): text is cleaned, split on whitespace and punctuation, lower-cased
// without accents, then each word is cut into the longest pieces the
// vocabulary holds ("##" marking a piece that continues a word).
type tokenizer struct {
	ids                map[string]int
	cls, sep, unk      int
	maxCharsPerWordTok int
}

func newTokenizer(vocab []string) *tokenizer {
	t := &tokenizer{ids: make(map[string]int, len(vocab)), maxCharsPerWordTok: 100}
	for i, w := range vocab {
		t.ids[w] = i
	}
	t.cls, t.sep, t.unk = t.ids["[CLS]"], t.ids["[SEP]"], t.ids["[UNK]"]
	return t
}

// encode returns [CLS], the text's pieces, [SEP]: at most max in all.
func (t *tokenizer) encode(text string, max int) []int {
	ids := []int{t.cls}
	for _, word := range basicTokens(text) {
		ids = t.wordPieces(ids, word)
		if len(ids) >= max-1 {
			ids = ids[:max-1]
			break
		}
	}
	return append(ids, t.sep)
}

// wordPieces appends the pieces of one word, or [UNK] when it cannot be
// cut into pieces of the vocabulary.
func (t *tokenizer) wordPieces(ids []int, word string) []int {
	runes := []rune(word)
	if len(runes) > t.maxCharsPerWordTok {
		return append(ids, t.unk)
	}
	start := len(ids)
	for from := 0; from < len(runes); {
		to, id := len(runes), -1
		for ; to > from; to-- {
			piece := string(runes[from:to])
			if from > 0 {
				piece = "##" + piece
			}
			if i, ok := t.ids[piece]; ok {
				id = i
				break
			}
		}
		if id < 0 {
			return append(ids[:start], t.unk)
		}
		ids = append(ids, id)
		from = to
	}
	return ids
}

// basicTokens is BERT's basic tokenization: control characters dropped,
// whitespace and CJK ideographs separating words, words lower-cased and
// stripped of accents, punctuation split into words of its own.
func basicTokens(text string) []string {
	var b strings.Builder
	for _, r := range text {
		switch {
		case r == 0 || r == 0xfffd || isControl(r):
		case isWhitespace(r):
			b.WriteByte(' ')
		case isCJK(r):
			b.WriteByte(' ')
			b.WriteRune(r)
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	var out []string
	for _, word := range strings.Fields(b.String()) {
		word = stripAccents(strings.ToLower(word))
		start := 0
		for i, r := range word {
			if isPunctuation(r) {
				if start < i {
					out = append(out, word[start:i])
				}
				out = append(out, string(r))
				start = i + len(string(r))
			}
		}
		if start < len(word) {
			out = append(out, word[start:])
		}
	}
	return out
}

// stripAccents decomposes a word and drops its combining marks.
func stripAccents(s string) string {
	d := unorm.NFD.String(s)
	return strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Mn, r) {
			return -1
		}
		return r
	}, d)
}

func isWhitespace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || unicode.Is(unicode.Zs, r)
}

func isControl(r rune) bool {
	if r == '\t' || r == '\n' || r == '\r' {
		return false
	}
	return unicode.Is(unicode.C, r)
}

// isPunctuation: ASCII symbols count as punctuation, as in BERT, as well
// as Unicode's punctuation categories.
func isPunctuation(r rune) bool {
	if r >= 33 && r <= 47 || r >= 58 && r <= 64 || r >= 91 && r <= 96 || r >= 123 && r <= 126 {
		return true
	}
	return unicode.IsPunct(r)
}

// isCJK reports the CJK Unified Ideographs blocks BERT splits around.
func isCJK(r rune) bool {
	return r >= 0x4E00 && r <= 0x9FFF || r >= 0x3400 && r <= 0x4DBF || r >= 0x20000 && r <= 0x2A6DF ||
		r >= 0x2A700 && r <= 0x2B73F || r >= 0x2B740 && r <= 0x2B81F || r >= 0x2B820 && r <= 0x2CEAF ||
		r >= 0xF900 && r <= 0xFAFF || r >= 0x2F800 && r <= 0x2FA1F
}
