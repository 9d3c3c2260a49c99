package index

import (
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// othersWhen is what a result said away from every time a query names
// counts for, against its score.
const othersWhen = 0.5

// near is how far from the time a query names a turn may have been said
// and still be about it: people tell of a day or a month a little after
// it ("last Friday I went to a pride parade"), or plan it a little before.
const near = 7 * 24 * time.Hour

// When it was said: a question that names a day, a month or a year ("What
// did Maria plan on 7 July, 2023?", "Which places in Canada was Evan
// visiting in July 2023?"), or a time back from when it is asked ("5 days
// ago", "last week", "two months ago"), asks about what was said then, so a
// result said more than a week away from every time it names (periods,
// see readTimes) counts half. Every result carries when its event
// happened. Of LoCoMo's 783 development questions, 108 name such a time,
// and a third of them had their answer first.
func preferNamedTime(periods []period, results []SearchResult) {
	if len(periods) == 0 {
		return
	}
	for i, r := range results {
		said := func(p period) bool { return p.near(r.Timestamp) }
		if !slices.ContainsFunc(periods, said) {
			results[i].Score *= othersWhen
		}
	}
	sortResults(results)
}

// A period is a day, a month or a year a query names; year 0 is that
// day or month in any year ("in June").
type period struct{ year, month, day int }

// near reports whether t is within a week of p.
func (p period) near(t time.Time) bool {
	t = t.UTC()
	years := []int{p.year}
	if p.year == 0 {
		years = []int{t.Year() - 1, t.Year(), t.Year() + 1}
	}
	for _, y := range years {
		var from, to time.Time
		switch {
		case p.day > 0:
			from = time.Date(y, time.Month(p.month), p.day, 0, 0, 0, 0, time.UTC)
			to = from.AddDate(0, 0, 1)
		case p.month > 0:
			from = time.Date(y, time.Month(p.month), 1, 0, 0, 0, 0, time.UTC)
			to = from.AddDate(0, 1, 0)
		default:
			from = time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
			to = from.AddDate(1, 0, 0)
		}
		if !t.Before(from.Add(-near)) && t.Before(to.Add(near)) {
			return true
		}
	}
	return false
}

// dayOf, monthOf and yearOf are the periods that hold t.
func dayOf(t time.Time) period   { return period{t.Year(), int(t.Month()), t.Day()} }
func monthOf(t time.Time) period { return period{year: t.Year(), month: int(t.Month())} }
func yearOf(t time.Time) period  { return period{year: t.Year()} }

// readTimes returns the days, months and years query names, and query
// without the words that name them: "7 July, 2023", "July 7th 2023", "on 3
// June", "in July 2023", "in June", "in 2022". "May" and "March" are months
// only as names are written, capitalised and not first ("May I ask…", "did
// they march"); a day that is none (31 February) names nothing. Times named
// back from the question ("last week") are counted from asked (see
// periodsBack). The query without its times is what a hybrid search looks
// for: a time is matched against when each turn was said
// (preferNamedTime), not against what turns say ("two months ago" finding
// "freezing for two days"); where nothing else is left, the query is kept.
func readTimes(query string, asked time.Time) (periods []period, rest string) {
	spans := wordSpans(query)
	ws := make([]string, len(spans))
	for i, s := range spans {
		ws[i] = query[s[0]:s[1]]
	}
	var out []period
	timed := make([]bool, len(ws)) // the words that name a time
	for i, w := range ws {
		month := monthNumber(w)
		if month == 0 || ((month == 3 || month == 5) && (i == 0 || !unicode.IsUpper(rune(w[0])))) {
			continue
		}
		p := period{month: month}
		next := i + 1
		if d := dayNumber(ws, i-1); d > 0 && !timed[i-1] {
			p.day, timed[i-1] = d, true
		} else if d := dayNumber(ws, next); d > 0 {
			p.day, timed[next] = d, true
			next++
		}
		if y := yearNumber(ws, next); y > 0 {
			p.year, timed[next] = y, true
		}
		if p.day > 0 && time.Date(max(p.year, 2000), time.Month(p.month), p.day, 0, 0, 0, 0, time.UTC).Day() != p.day {
			continue
		}
		timed[i] = true
		out = append(out, p)
	}
	for i := range ws {
		if y := yearNumber(ws, i); y > 0 && !timed[i] {
			timed[i] = true
			out = append(out, period{year: y})
		}
	}
	out = append(out, periodsBack(ws, asked.UTC(), timed)...)
	if len(out) == 0 {
		return nil, query
	}
	for i := len(ws) - 1; i > 0; i-- { // "in June", "on 3 June": the preposition goes with its time
		switch strings.ToLower(ws[i-1]) {
		case "in", "on", "during":
			timed[i-1] = timed[i-1] || timed[i]
		}
	}
	if rest = without(query, spans, timed); len(words(rest)) == 0 {
		rest = query // nothing but a time: searched for as it is
	}
	return out, rest
}

// without is text without the words (at spans) that drop marks, the
// spaces before them, nor what lies between two of them.
func without(text string, spans [][2]int, drop []bool) string {
	var b strings.Builder
	at := 0 // text[at:] is still to write
	for i := 0; i < len(spans); i++ {
		if !drop[i] {
			continue
		}
		last := i
		for last+1 < len(spans) && drop[last+1] {
			last++
		}
		from := spans[i][0]
		for from > at && unicode.IsSpace(rune(text[from-1])) { // "for two months ago?": "for?"
			from--
		}
		b.WriteString(text[at:from])
		at, i = spans[last][1], last
	}
	b.WriteString(text[at:])
	return strings.Join(strings.Fields(b.String()), " ")
}

// periodsBack returns the times words name back from asked: "yesterday",
// "today", "last week", "last month", "last year", and "5 days ago", "two
// weeks ago", "a month ago", "3 years ago" ("how many days ago" names none),
// and marks their words timed.
func periodsBack(ws []string, asked time.Time, timed []bool) []period {
	var out []period
	took := func(p period, from, to int) {
		out = append(out, p)
		for i := from; i <= to; i++ {
			timed[i] = true
		}
	}
	back := func(unit string, n int) (period, bool) {
		switch strings.TrimSuffix(strings.ToLower(unit), "s") {
		case "day":
			return dayOf(asked.AddDate(0, 0, -n)), true
		case "week":
			return dayOf(asked.AddDate(0, 0, -7*n)), true
		case "month":
			return monthOf(asked.AddDate(0, -n, 0)), true
		case "year":
			return yearOf(asked.AddDate(-n, 0, 0)), true
		}
		return period{}, false
	}
	for i, w := range ws {
		switch w = strings.ToLower(w); {
		case w == "today":
			took(dayOf(asked), i, i)
		case w == "yesterday":
			took(dayOf(asked.AddDate(0, 0, -1)), i, i)
		case w == "last" && i+1 < len(ws) && !strings.HasSuffix(strings.ToLower(ws[i+1]), "s"):
			if p, ok := back(ws[i+1], 1); ok {
				took(p, i, i+1)
			}
		case w == "ago" && i >= 2 && count(ws[i-2]) > 0:
			if p, ok := back(ws[i-1], count(ws[i-2])); ok {
				took(p, i-2, i)
			}
		}
	}
	return out
}

var counts = map[string]int{"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12}

// count is word read as a small number ("5", "five", "a"), or 0.
func count(word string) int {
	if n, err := strconv.Atoi(word); err == nil && n > 0 && n <= 100 {
		return n
	}
	return counts[strings.ToLower(word)]
}

var monthNames = [...]string{"january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"}

func monthNumber(word string) int {
	if len(word) < 3 || len(word) > len("september") {
		return 0
	}
	for i, m := range monthNames {
		if strings.EqualFold(m, word) {
			return i + 1
		}
	}
	return 0
}

// dayNumber is ws[i] read as a day of a month ("7", "07", "7th"), or 0.
func dayNumber(ws []string, i int) int {
	if i < 0 || i >= len(ws) {
		return 0
	}
	w := strings.ToLower(ws[i])
	for _, suffix := range []string{"st", "nd", "rd", "th"} {
		w = strings.TrimSuffix(w, suffix)
	}
	if len(w) > 2 {
		return 0
	}
	d, err := strconv.Atoi(w)
	if err != nil || d < 1 || d > 31 {
		return 0
	}
	return d
}

// yearNumber is ws[i] read as a year (1900 to 2099), or 0.
func yearNumber(ws []string, i int) int {
	if i < 0 || i >= len(ws) || len(ws[i]) != 4 || !(strings.HasPrefix(ws[i], "19") || strings.HasPrefix(ws[i], "20")) {
		return 0
	}
	y, err := strconv.Atoi(ws[i])
	if err != nil {
		return 0
	}
	return y
}
