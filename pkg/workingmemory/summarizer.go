package workingmemory

import (
	"context"
	"math"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/hectormem/hector/pkg/session"
)

// Summarizer condenses events into a summary. It is given the previous
// summary (or "") and only the events evicted since, so summaries grow
// incrementally instead of rereading the whole history.
type Summarizer interface {
	Summarize(ctx context.Context, previous string, events []*session.Event) (string, error)
}

// DefaultSummaryChars bounds an extractive summary's length.
const DefaultSummaryChars = 1500

// Extractive is the offline summarizer: it keeps the most informative
// sentences of the previous summary and the new events (rare words, names
// and numbers weigh most), in their original order, within a length bound.
type Extractive struct{ maxChars int }

// NewExtractive returns an extractive summarizer of at most maxChars
// characters (0: DefaultSummaryChars).
func NewExtractive(maxChars int) *Extractive {
	if maxChars <= 0 {
		maxChars = DefaultSummaryChars
	}
	return &Extractive{maxChars}
}

var sentenceEnd = regexp.MustCompile(`(?:[.!?]+["')\]]*\s+)|\n+`)

type sentence struct {
	text  string
	order int
	score float64
}

func (x *Extractive) Summarize(ctx context.Context, previous string, events []*session.Event) (string, error) {
	var sentences []*sentence
	add := func(text string, bonus float64) {
		for _, s := range sentenceEnd.Split(text, -1) {
			if s = strings.TrimSpace(s); s != "" {
				sentences = append(sentences, &sentence{text: s, order: len(sentences), score: bonus})
			}
		}
	}
	add(previous, 1) // what was worth keeping before usually still is
	for _, ev := range events {
		if ev.Message == nil {
			continue
		}
		if text := ev.Message.Text(); text != "" {
			add(text, 0)
		}
	}
	if len(sentences) == 0 {
		return previous, nil
	}
	// A word in few sentences says more than one in many.
	df := map[string]int{}
	for _, s := range sentences {
		for w := range wordSet(s.text) {
			df[w]++
		}
	}
	n := float64(len(sentences))
	for _, s := range sentences {
		words := strings.Fields(s.text)
		for i, w := range words {
			core := strings.TrimFunc(w, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
			if core == "" {
				continue
			}
			s.score += math.Log(1 + n/float64(df[strings.ToLower(core)]))
			if strings.ContainsFunc(core, unicode.IsDigit) {
				s.score += 2 // numbers: dates, amounts, versions
			} else if i > 0 && unicode.IsUpper([]rune(core)[0]) {
				s.score += 1.5 // names
			}
		}
		s.score /= math.Sqrt(float64(len(words) + 1)) // do not favour sentences for being long
	}
	ranked := append([]*sentence(nil), sentences...)
	sort.SliceStable(ranked, func(i, j int) bool { return ranked[i].score > ranked[j].score })
	var chosen []*sentence
	used := 0
	for _, s := range ranked {
		if used+len(s.text)+1 > x.maxChars {
			continue
		}
		chosen = append(chosen, s)
		used += len(s.text) + 1
	}
	sort.Slice(chosen, func(i, j int) bool { return chosen[i].order < chosen[j].order })
	parts := make([]string, len(chosen))
	for i, s := range chosen {
		parts[i] = strings.TrimRight(s.text, " ")
		if !strings.ContainsAny(parts[i][len(parts[i])-1:], ".!?") {
			parts[i] += "."
		}
	}
	return strings.Join(parts, " "), nil
}

func wordSet(text string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		set[w] = true
	}
	return set
}
