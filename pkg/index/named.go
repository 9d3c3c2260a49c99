package index

import (
	"strings"
	"unicode"
)

// othersShare is what a result by anyone but the author a query names
// counts for, against its score.
const othersShare = 0.5

// Who said it: a question that names one of the people whose turns it
// finds ("What did Caroline research?") asks what that person said, so
// what anyone else said counts half. Of LoCoMo's development questions
// that name one of the two speakers, 1,008 of 1,058 answer turns are that
// speaker's, yet the other's turn came first for 80 of them, often
// the same words said back. On that half, hit@1 rose from 0.471 to 0.493
// and recall@5 from 0.657 to 0.674 (others at 0.6; 0.4 to 0.8 alike).
// Only a name counts (see Document.named): a role such as
// "user" or "assistant" is no one a question names, so a conversation
// between a user and an assistant, LongMemEval's, is left as it is; a
// query that names two authors, or none, too.
func preferNamedAuthor(query string, results []SearchResult) {
	var named string // the one author among the results the query names
	padded := " " + strings.Join(words(strings.ToLower(query)), " ") + " "
	seen := map[string]bool{}
	for _, r := range results {
		if seen[r.Author] {
			continue
		}
		seen[r.Author] = true
		name := strings.Join(words(strings.ToLower(r.Author)), " ")
		if name == "" || !(&Document{Author: r.Author, Role: r.Role}).named() || !strings.Contains(padded, " "+name+" ") {
			continue
		}
		if named != "" && !strings.EqualFold(named, r.Author) {
			return // two: the question is about both
		}
		named = r.Author
	}
	if named == "" {
		return
	}
	for i, r := range results {
		if !strings.EqualFold(r.Author, named) {
			results[i].Score *= othersShare
		}
	}
	sortResults(results)
}

// words are text's runs of letters and digits: "Caroline's" holds
// "Caroline", "1,2023" holds "1" and "2023".
func words(text string) []string {
	return strings.FieldsFunc(text, func(r rune) bool { return !inWord(r) })
}

func inWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

// wordSpans are where text's words (see words) begin and end, in bytes.
func wordSpans(text string) [][2]int {
	var spans [][2]int
	start := -1
	for i, r := range text {
		switch {
		case inWord(r) && start < 0:
			start = i
		case !inWord(r) && start >= 0:
			spans = append(spans, [2]int{start, i})
			start = -1
		}
	}
	if start >= 0 {
		spans = append(spans, [2]int{start, len(text)})
	}
	return spans
}
