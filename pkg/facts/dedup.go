package facts

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/kljensen/snowball/english"
)

// Deterministic consolidation: without a model to judge, a fact written
// under a new key is taken for one the scope already holds only when the
// rules below say so, and they favour keeping both. Merging two facts
// that differ loses one; keeping two phrasings of one fact costs a line.
// On Hector's set of 50 pairs of phrasings and 52 near-misses
// (testdata/dedup.tsv, TestDeterministicDedup) they merge no near-miss.

// phrasing is what the rules compare of a fact's text.
type phrasing struct {
	// content is its words in order, stemmed, without stop words; negations
	// ("not", "no", "never", "without") are kept.
	content []string
	// entities counts its names (capitalised words after the first) and
	// numbers (digits, or number words), lower-cased.
	entities map[string]int
	// numbers are its numbers in order: "room 3 on floor 12" is not "room
	// 12 on floor 3", nor a code "4 3 2 1" the code "1 2 3 4".
	numbers []string
}

// sameFactCosine is how near in meaning (the cosine of the built-in
// embedder's vectors) two texts naming the same things must be to be one
// fact. The phrasings the rules merge on the set are 0.75 and over; below
// it are pairs that say the same names in another relation ("Owes Tom 50
// euros" and "Tom owes her 50 euros", 0.61).
const sameFactCosine = 0.74

// negations are kept among the content words: they change what a fact says.
var negations = map[string]bool{"not": true, "no": true, "never": true, "without": true, "nobody": true, "nothing": true}

// fillers are words that say how often or how much without changing what
// a fact says, left out with the stop words.
var fillers = map[string]bool{"every": true, "each": true, "also": true, "just": true, "really": true}

var numberWords = map[string]int{"zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
	"nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "twenty": 20, "thirty": 30, "hundred": 100, "thousand": 1000, "half": -2}

// contractions spell out what English writes short, so that "doesn't" and
// "does not" are one phrasing.
var contractions = strings.NewReplacer("’", "'", "can't", "cannot", "won't", "will not", "n't", " not", "'s", "", "'m", "", "'re", "", "'ve", "", "'ll", "", "'d", "")

func phrase(text string) phrasing {
	p := phrasing{entities: map[string]int{}}
	text = contractions.Replace(text)
	for i, word := range strings.FieldsFunc(text, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != ':'
	}) {
		word = strings.Trim(word, "-:")
		lower := strings.ToLower(word)
		switch {
		case word == "":
		case strings.ContainsFunc(word, unicode.IsDigit):
			p.entities[lower]++
			p.numbers = append(p.numbers, lower)
		case numberWords[lower] != 0:
			p.entities[strconv.Itoa(numberWords[lower])]++
			p.numbers = append(p.numbers, strconv.Itoa(numberWords[lower]))
		case negations[lower]:
			p.content = append(p.content, lower)
		case english.IsStopWord(lower) || fillers[lower] || lower == "cannot":
			if lower == "cannot" {
				p.content = append(p.content, "not")
			}
		case i > 0 && unicode.IsUpper([]rune(word)[0]):
			p.entities[lower]++
			p.content = append(p.content, lower)
		default:
			p.content = append(p.content, english.Stem(lower, false))
		}
	}
	return p
}

// minStatement is how many content words a value needs to be compared
// across keys: a shorter one ("Konflux", "React") means something only
// with its key (deploy/tool, frontend), and two keys may hold it.
const minStatement = 2

// sameFact reports whether two values state one fact, by the rules, both
// of which ask for the same numbers in the same order:
//   - the same content words in the same order ("Does not drink alcohol",
//     "Doesn't drink alcohol"); or
//   - with a cosine (haveCosine) of at least sameFactCosine: the same
//     names and numbers, at least one of them, a word in common besides
//     them, a rewording of one another (see rewording), and not one word
//     apart in otherwise the same words, which is how near-misses look
//     ("Has a cat named Luna", "Has a dog named Luna").
func sameFact(a, b phrasing, cosine float64, haveCosine bool) bool {
	if len(a.content) < minStatement || len(b.content) < minStatement || !slices.Equal(a.numbers, b.numbers) {
		return false
	}
	if slices.Equal(a.content, b.content) && maps.Equal(a.entities, b.entities) {
		return true
	}
	if !haveCosine || cosine < sameFactCosine || len(a.entities) == 0 || !maps.Equal(a.entities, b.entities) {
		return false
	}
	if slices.ContainsFunc(a.content, isNegation) != slices.ContainsFunc(b.content, isNegation) {
		return false
	}
	return sharesAWord(a, b) && rewording(a.content, b.content) && !oneWordApart(a.content, b.content)
}

// rewording reports whether one of two word sequences has at most one word
// the other lacks: "Deploys with Konflux" and "Uses Konflux for
// deployments" are, "Walks the dog Rex every morning" and "Feeds the dog
// Rex at night" are not.
func rewording(a, b []string) bool {
	lacks := func(x, y []string) int {
		n := 0
		for _, w := range x {
			if !slices.Contains(y, w) {
				n++
			}
		}
		return n
	}
	return min(lacks(a, b), lacks(b, a)) <= 1
}

// sharesAWord reports whether two phrasings have a content word in common
// besides their names: "Owns a dog called Rex" and "Has a cat named Rex"
// share only the name.
func sharesAWord(a, b phrasing) bool {
	for _, w := range a.content {
		if a.entities[w] == 0 && slices.Contains(b.content, w) {
			return true
		}
	}
	return false
}

func isNegation(w string) bool { return negations[w] }

// signatures are keyed hashes of what sameFact compares: the content words
// with the names and numbers, and the numbers' order (equal for the first
// rule), and the names and numbers alone ("" when there are none; equal
// for the second). Keyed with
// a key derived from the facts key, so the database learns only which
// facts share them.
func (p phrasing) signatures(key []byte) (content, entities string) {
	names := slices.Sorted(maps.Keys(p.entities))
	var counted []string
	for _, n := range names {
		counted = append(counted, n+"\x00"+strconv.Itoa(p.entities[n]))
	}
	sum := func(parts ...string) string {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(strings.Join(parts, "\x01")))
		return hex.EncodeToString(h.Sum(nil))
	}
	content = sum(strings.Join(p.content, " "), strings.Join(counted, " "))
	if len(p.numbers) > 1 { // a fact with one number or none keeps the signature it had before numbers' order counted
		content = sum(strings.Join(p.content, " "), strings.Join(counted, " "), strings.Join(p.numbers, " "))
	}
	if len(names) > 0 {
		entities = sum("entities", strings.Join(counted, " "))
	}
	return content, entities
}

// oneWordApart reports whether two word sequences differ in one place.
func oneWordApart(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	differ := 0
	for i := range a {
		if a[i] != b[i] {
			differ++
		}
	}
	return differ == 1
}
