package index

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestReadTimes(t *testing.T) {
	asked := time.Date(2023, 4, 1, 16, 8, 0, 0, time.UTC) // a Saturday
	for _, c := range []struct {
		query string
		want  []period
	}{
		{"What did Maria plan on 7 July, 2023?", []period{{2023, 7, 7}}},
		{"What book did Tim finish on 8th December, 2023?", []period{{2023, 12, 8}}},
		{"Where was the picture shared on December 1,2023 taken?", []period{{2023, 12, 1}}},
		{"What was Sam doing on December 4, 2023?", []period{{2023, 12, 4}}},
		{"Which places in Canada was Evan visiting in July 2023?", []period{{2023, 7, 0}}},
		{"When did Melanie go camping in june?", []period{{0, 6, 0}}},
		{"Which country did James visit in 2021?", []period{{2021, 0, 0}}},
		{"Where was John between August 11 and August 15 2023?", []period{{0, 8, 11}, {2023, 8, 15}}},
		{"What did I cook on 3 June?", []period{{0, 6, 3}}},
		{"How many pre-1920 coins do I have?", []period{{1920, 0, 0}}},
		{"What did I say in May?", []period{{0, 5, 0}}},
		{"May I ask what my dog is called?", nil},
		{"did they march to the town hall", nil},
		{"the pasta from 31 February 2023", nil},
		{"what is my dog called", nil},
		{"What was the social media activity I did 5 days ago?", []period{{2023, 3, 27}}},
		{"What did I do with Rachel on the Wednesday two months ago?", []period{{2023, 2, 0}}},
		{"Where did I go last week?", []period{{2023, 3, 25}}},
		{"What did I cook yesterday, and today?", []period{{2023, 3, 31}, {2023, 4, 1}}},
		{"what did we plan last month", []period{{2023, 3, 0}}},
		{"a year ago", []period{{2022, 0, 0}}},
		{"How many days ago did I attend a networking event?", nil},
		{"the last thing I said", nil},
		{"call 555 1234 at 10:30", nil},
	} {
		if got, _ := readTimes(c.query, asked); !slices.Equal(got, c.want) {
			t.Errorf("%q: %v, want %v", c.query, got, c.want)
		}
	}
}

// A query is searched for without the words that name its times, which
// are matched against when each turn was said instead.
func TestReadTimesLeavesWhatIsAsked(t *testing.T) {
	asked := time.Date(2023, 4, 1, 16, 8, 0, 0, time.UTC)
	for query, want := range map[string]string{
		"What did Maria plan on 7 July, 2023?":                            "What did Maria plan?",
		"What did Maria plan to do later on the evening of 7 July, 2023?": "What did Maria plan to do later on the evening of?",
		"Which places in Canada was Evan visiting in July 2023?":          "Which places in Canada was Evan visiting?",
		"What did my girl sign up for two months ago?":                    "What did my girl sign up for?",
		"Where did I go last week, and yesterday?":                        "Where did I go, and?",
		"When did Melanie go camping in june":                             "When did Melanie go camping",
		"May I ask what my dog is called?":                                "May I ask what my dog is called?",
		"the last thing I said":                                           "the last thing I said",
		"How many days ago did I attend a networking event?":              "How many days ago did I attend a networking event?",
		"yesterday?":                 "yesterday?", // nothing else to search for
		"on 7 July, 2023":            "on 7 July, 2023",
		"Caroline's  plans in 2022 ": "Caroline's plans",
	} {
		if _, got := readTimes(query, asked); got != want {
			t.Errorf("%q is searched for as %q, want %q", query, got, want)
		}
	}
}

func TestPeriodNearIsWithinAWeek(t *testing.T) {
	at := func(s string) time.Time { t, _ := time.Parse(time.DateOnly, s); return t }
	for _, c := range []struct {
		p    period
		t    string
		want bool
	}{
		{period{2023, 7, 7}, "2023-07-07", true},
		{period{2023, 7, 7}, "2023-07-14", true}, // "last Friday", a week on
		{period{2023, 7, 7}, "2023-07-15", false},
		{period{2023, 7, 7}, "2023-06-30", true},
		{period{2023, 7, 7}, "2023-06-29", false},
		{period{2023, 7, 0}, "2023-08-07", true},
		{period{2023, 7, 0}, "2023-08-08", false},
		{period{2023, 7, 0}, "2024-07-15", false},
		{period{0, 7, 0}, "2024-07-15", true},
		{period{0, 1, 0}, "2023-12-28", true}, // January of the next year
		{period{0, 12, 0}, "2024-01-03", true},
		{period{2021, 0, 0}, "2021-06-01", true},
		{period{2021, 0, 0}, "2022-03-01", false},
	} {
		if got := c.p.near(at(c.t)); got != c.want {
			t.Errorf("%v near %s = %v, want %v", c.p, c.t, got, c.want)
		}
	}
}

func TestWhatWasSaidThenComesFirst(t *testing.T) {
	on := func(id, day string, score float64) SearchResult {
		ts, _ := time.Parse(time.DateOnly, day)
		return SearchResult{SessionID: "s", EventID: id, Timestamp: ts, Score: score}
	}
	results := []SearchResult{on("june", "2023-06-20", 0.6), on("july", "2023-07-10", 0.5), on("late-july", "2023-08-05", 0.2)}
	for _, c := range []struct {
		query string
		want  []string
	}{
		{"Which places did Evan visit in July 2023?", []string{"july", "june", "late-july"}}, // 0.5 > 0.6/2
		{"Which places did Evan visit?", []string{"june", "july", "late-july"}},
		{"What did Evan say on 20 June, 2023?", []string{"june", "july", "late-july"}},
		{"Which places did Evan visit in 2022?", []string{"june", "july", "late-july"}}, // every one halved
	} {
		got := slices.Clone(results)
		periods, _ := readTimes(c.query, time.Now())
		preferNamedTime(periods, got)
		if !slices.Equal(ids(got), c.want) {
			t.Errorf("%q: %v, want %v", c.query, ids(got), c.want)
		}
		if !slices.IsSortedFunc(got, func(a, b SearchResult) int { return cmp.Compare(b.Score, a.Score) }) {
			t.Errorf("%q: scores out of order: %v", c.query, got)
		}
	}
}

// FuzzReadTimes: whatever the query, every period named is a real day,
// month or year, a query that names none is searched for as it is, and one
// that does is never searched for as nothing.
func FuzzReadTimes(f *testing.F) {
	for _, s := range []string{"on 7 July, 2023", "5 days ago", "last week", "100 years ago", "101 years ago", "in June", "July 4th, 1999 and 2020", "May I?", "31 February 2023", "0 May 0000", "99 july 9999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, query string) {
		periods, rest := readTimes(query, time.Date(2023, 4, 1, 0, 0, 0, 0, time.UTC))
		if len(periods) == 0 && rest != query || strings.TrimSpace(rest) == "" && strings.TrimSpace(query) != "" {
			t.Fatalf("%q: searched for as %q", query, rest)
		}
		for _, p := range periods {
			if p.month < 0 || p.month > 12 || p.day < 0 || p.day > 31 || (p.year != 0 && (p.year < 1900 || p.year > 2099)) || (p.day > 0 && p.month == 0) || p == (period{}) {
				t.Fatalf("%q named %+v", query, p)
			}
			if p.day > 0 && time.Date(max(p.year, 2000), time.Month(p.month), p.day, 0, 0, 0, 0, time.UTC).Day() != p.day {
				t.Fatalf("%q named a day that is none: %+v", query, p)
			}
			p.near(time.Now())
		}
	})
}

// BenchmarkReadingTheQuestion: what the rules that read a query beyond its
// words (who, when, which session) cost a LoCoMo search, over the 40
// candidates it holds: go test -run '^$' -bench ReadingTheQuestion ./pkg/index
func BenchmarkReadingTheQuestion(b *testing.B) {
	var results []SearchResult
	day := time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)
	for i := range 40 {
		r := said([]string{"Caroline", "Melanie"}[i%2], int64(i), 1-float64(i)/40)
		r.SessionID, r.Timestamp = fmt.Sprintf("session_%d", i%9), day.AddDate(0, 0, 14*(i%9))
		results = append(results, r)
	}
	for b.Loop() {
		rs := slices.Clone(results)
		preferNamedAuthor("What did Caroline paint on 7 July, 2023?", rs)
		periods, _ := readTimes("What did Caroline paint on 7 July, 2023?", day)
		preferNamedTime(periods, rs)
		creditSessions(rs)
	}
}
