package index

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
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
// visiting in July 2023?") asks about what was said then, so a result
// said more than a week away from every time it names counts half. Every
// result carries when its event happened. Of LoCoMo's 783 development
// questions, 108 name such a time, and a third of them had their answer
// first.
func preferNamedTime(query string, results []SearchResult) {
	periods := periodsNamed(query)
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

const months = "january|february|march|april|may|june|july|august|september|october|november|december"

// The ways a query names a time, the most precise first: each match is
// taken out of the query before the next pattern reads it.
var (
	dayMonthYear = regexp.MustCompile(`(?i)\b(\d{1,2})(?:st|nd|rd|th)?\s+(` + months + `),?\s*(\d{4})\b`) // 7 July, 2023
	monthDayYear = regexp.MustCompile(`(?i)\b(` + months + `)\s+(\d{1,2})(?:st|nd|rd|th)?,?\s*(\d{4})\b`) // July 7, 2023
	monthYear    = regexp.MustCompile(`(?i)\b(` + months + `),?\s+(\d{4})\b`)                             // July 2023
	monthAlone   = regexp.MustCompile(`(?i)\b(` + months + `)\b`)                                         // in July
	yearAlone    = regexp.MustCompile(`\b((?:19|20)\d\d)\b`)                                              // in 2023
)

// periodsNamed returns the days, months and years query names. "May" and
// "March" are months only as names are written, capitalised and not
// first ("May I ask…", "did they march"); a date that is no date
// (31 February) names nothing.
func periodsNamed(query string) []period {
	var out []period
	add := func(year, month, day string) {
		p := period{month: monthNumber(month)}
		p.year, _ = strconv.Atoi(year)
		p.day, _ = strconv.Atoi(day)
		if p.day > 0 && time.Date(max(p.year, 2000), time.Month(p.month), p.day, 0, 0, 0, 0, time.UTC).Day() != p.day {
			return
		}
		out = append(out, p)
	}
	q := query
	for _, m := range dayMonthYear.FindAllStringSubmatch(q, -1) {
		add(m[3], m[2], m[1])
	}
	q = dayMonthYear.ReplaceAllString(q, " ")
	for _, m := range monthDayYear.FindAllStringSubmatch(q, -1) {
		add(m[3], m[1], m[2])
	}
	q = monthDayYear.ReplaceAllString(q, " ")
	for _, m := range monthYear.FindAllStringSubmatch(q, -1) {
		add(m[2], m[1], "")
	}
	q = monthYear.ReplaceAllString(q, " ")
	for _, m := range monthAlone.FindAllStringSubmatchIndex(q, -1) {
		name := q[m[2]:m[3]]
		if l := strings.ToLower(name); (l == "may" || l == "march") && (name[0] != strings.ToUpper(name)[0] || strings.TrimSpace(q[:m[0]]) == "") {
			continue
		}
		add("", name, "")
	}
	q = monthAlone.ReplaceAllString(q, " ")
	for _, m := range yearAlone.FindAllStringSubmatch(q, -1) {
		add(m[1], "", "")
	}
	return out
}

func monthNumber(name string) int {
	for i, m := range strings.Split(months, "|") {
		if strings.EqualFold(m, name) {
			return i + 1
		}
	}
	return 0
}
