package eval

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
)

// Index is what Run needs of an index: what a server's has (index.Live).
type Index interface {
	Index(ctx context.Context, s session.Session) error
	Search(ctx context.Context, req *index.SearchRequest) (*index.SearchResponse, error)
	CatchUp(ctx context.Context, sessions session.Service) error
	VectorCursor(ctx context.Context) (cursor int64, background bool, err error)
}

// Options change what Run does.
type Options struct {
	// App is the app the users' sessions are kept under; "eval" if empty.
	App string
	// Questions, when above 0, asks only that many questions, taken in
	// turn from each category (in the file's order within one), and loads
	// only the conversations they are about.
	Questions int
	// Progress, when set, hears how loading and indexing go.
	Progress func(Progress)
	// Clients is how many clients ask the questions at once (1 when not
	// above 0): search latency as a server under load gives it. The
	// figures do not depend on it.
	Clients int
	// Searched, when set, hears how long each question's search took, as
	// it ends, from the client that asked it (from several at once).
	Searched func(questionID string, took time.Duration)
	// Answered, when set, hears each question's results, best first, and
	// its figures, from the client that asked it (from several at once):
	// which questions an index misses, and what it ranks above the answer.
	Answered func(q Question, results []index.SearchResult, figures map[string]float64)
}

// Progress is how far one stage of a run is.
type Progress struct {
	Stage       string // "loading" (appending turns) or "indexing" (the index catching up)
	Done, Total int
}

// Report is what a run measured.
type Report struct {
	Format    string   `json:"format"`
	Index     string   `json:"index"`   // what was measured, as the caller describes it
	Clients   int      `json:"clients"` // asking the questions at once
	Users     int      `json:"users"`
	Sessions  int      `json:"sessions"`
	Turns     int      `json:"turns"`
	Questions int      `json:"questions"`
	Notes     []string `json:"notes,omitempty"`
	// IngestSeconds is appending every turn (terms indexed as they come);
	// CatchUpSeconds the wait after it until the index, vectors embedded
	// in the background included, held them all.
	IngestSeconds  float64 `json:"ingest_seconds"`
	CatchUpSeconds float64 `json:"catch_up_seconds"`
	// SearchMillis is the searches' latency, and the slowest's with its
	// question's ID: an outlier to look into.
	SearchMillis struct {
		P50     float64 `json:"p50"`
		P99     float64 `json:"p99"`
		Max     float64 `json:"max"`
		Slowest string  `json:"slowest"`
	} `json:"search_ms"`
	Metrics    []string  `json:"metrics"`
	Overall    Figures   `json:"overall"`
	Categories []Figures `json:"categories"`
}

// Figures are the mean of each metric over a group of questions.
type Figures struct {
	Name      string             `json:"name"`
	Questions int                `json:"questions"`
	Apart     bool               `json:"apart,omitempty"` // left out of the overall figures
	Values    map[string]float64 `json:"values"`
}

// searchLimit is how many results a question asks for: the turn-level
// figures look at 10, LongMemEval ranks sessions by their best turn, and
// needs enough turns for 10 sessions.
func searchLimit(metrics []string) int {
	if slices.Equal(metrics, SessionMetrics) {
		return 100
	}
	return 10
}

// Run plays d's conversations into sessions and idx as a server does
// (each turn appended as an event with its turn's ID, the session indexed
// after), waits until the index has caught up, vectors included, asks
// each question as its own user, and reports the figures.
func Run(ctx context.Context, d *Dataset, sessions session.Service, idx Index, o Options) (*Report, error) {
	app := cmp.Or(o.App, "eval")
	progress := func(p Progress) {
		if o.Progress != nil {
			o.Progress(p)
		}
	}
	d = d.sample(o.Questions)
	r := &Report{Format: d.Format, Clients: max(o.Clients, 1), Users: len(d.Users), Sessions: d.Sessions(), Turns: d.Turns(), Questions: len(d.Questions),
		Notes: d.Notes, Metrics: d.Metrics}

	start := time.Now()
	done := 0
	for _, u := range d.Users {
		for _, s := range u.Sessions {
			created, err := sessions.Create(ctx, &session.CreateRequest{AppName: app, UserID: u.ID, SessionID: s.ID})
			if err != nil {
				return nil, fmt.Errorf("user %q, session %q: %w", u.ID, s.ID, err)
			}
			for _, t := range s.Turns {
				ev := &session.Event{ID: t.ID, Author: t.Author, Timestamp: t.Time, Message: session.NewTextMessage(t.Role, t.Text)}
				if err := sessions.AppendEvent(ctx, created.Session, ev); err != nil {
					return nil, fmt.Errorf("user %q, session %q, turn %q: %w", u.ID, s.ID, t.ID, err)
				}
				done++
				progress(Progress{Stage: "loading", Done: done, Total: r.Turns})
			}
			if err := idx.Index(ctx, created.Session); err != nil {
				return nil, fmt.Errorf("indexing user %q, session %q: %w", u.ID, s.ID, err)
			}
		}
	}
	r.IngestSeconds = time.Since(start).Seconds()

	start = time.Now()
	if err := catchUp(ctx, sessions, idx, progress); err != nil {
		return nil, err
	}
	r.CatchUpSeconds = time.Since(start).Seconds()

	limit := searchLimit(d.Metrics)
	took := make([]time.Duration, len(d.Questions))
	scores := make([]map[string]float64, len(d.Questions))
	var next atomic.Int64 // the next question to ask
	g, gctx := errgroup.WithContext(ctx)
	for range r.Clients {
		g.Go(func() error {
			for gctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(d.Questions) {
					return nil
				}
				q := d.Questions[i]
				began := time.Now()
				resp, err := idx.Search(gctx, &index.SearchRequest{Query: q.Text, AppName: app, UserID: q.UserID, Limit: limit, AskedAt: q.AskedAt})
				took[i] = time.Since(began)
				if err != nil {
					return fmt.Errorf("question %q: %w", q.ID, err)
				}
				if o.Searched != nil {
					o.Searched(q.ID, took[i])
				}
				hits := make([]Hit, len(resp.Results))
				for j, res := range resp.Results {
					hits[j] = Hit{EventID: res.EventID, SessionID: res.SessionID}
				}
				scores[i] = score(d.Metrics, q, hits)
				if o.Answered != nil {
					o.Answered(q, resp.Results, scores[i])
				}
			}
			return gctx.Err()
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	slowest := 0
	for i, t := range took {
		if t > took[slowest] {
			slowest = i
		}
	}
	r.SearchMillis.Max, r.SearchMillis.Slowest = millis(took[slowest]), d.Questions[slowest].ID
	slices.Sort(took)
	r.SearchMillis.P50 = millis(took[len(took)/2])
	r.SearchMillis.P99 = millis(took[min(len(took)-1, len(took)*99/100)])
	r.Overall, r.Categories = aggregate(d, scores)
	return r, nil
}

// catchUp waits until the index holds every change, vectors embedded in
// the background included.
func catchUp(ctx context.Context, sessions session.Service, idx Index, progress func(Progress)) error {
	if err := idx.CatchUp(ctx, sessions); err != nil {
		return fmt.Errorf("index: catching up: %w", err)
	}
	changes, err := sessions.Changes(ctx, &session.ChangesRequest{Limit: 1})
	if err != nil {
		return err
	}
	head := changes.Head
	first := int64(-1)
	for {
		cursor, background, err := idx.VectorCursor(ctx)
		if err != nil {
			return fmt.Errorf("index: how far the vectors are: %w", err)
		}
		if !background || cursor >= head {
			return nil
		}
		if first < 0 {
			first = cursor
		}
		progress(Progress{Stage: "indexing", Done: int(cursor - first), Total: int(head - first)})
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond): // the background lane has no signal to wait on
		}
	}
}

func millis(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// first is d with its first n questions only (all when n is 0) and the
// users they are about.
func (d *Dataset) sample(n int) *Dataset {
	if n <= 0 || n >= len(d.Questions) {
		return d
	}
	// In turn from each category, each category's in the file's order: a
	// file sorted by category (LongMemEval's) is not asked of one only.
	var categories []string
	byCategory := map[string][]int{}
	for i, q := range d.Questions {
		if _, seen := byCategory[q.Category]; !seen {
			categories = append(categories, q.Category)
		}
		byCategory[q.Category] = append(byCategory[q.Category], i)
	}
	var picked []int
	for round := 0; len(picked) < n; round++ {
		for _, c := range categories {
			if round < len(byCategory[c]) && len(picked) < n {
				picked = append(picked, byCategory[c][round])
			}
		}
	}
	slices.Sort(picked)
	out := *d
	out.Questions = nil
	asked := map[string]bool{}
	for _, i := range picked {
		out.Questions = append(out.Questions, d.Questions[i])
		asked[d.Questions[i].UserID] = true
	}
	out.Users = nil
	for _, u := range d.Users {
		if asked[u.ID] {
			out.Users = append(out.Users, u)
		}
	}
	return &out
}

// aggregate averages each metric over every question that has it: overall
// (questions reported apart left out) and by category, by name, those
// reported apart last.
func aggregate(d *Dataset, scores []map[string]float64) (Figures, []Figures) {
	type sums struct {
		f      Figures
		counts map[string]int
	}
	add := func(s *sums, values map[string]float64) {
		s.f.Questions++
		for k, v := range values {
			s.f.Values[k] += v
			s.counts[k]++
		}
	}
	newSums := func(name string, apart bool) *sums {
		return &sums{f: Figures{Name: name, Apart: apart, Values: map[string]float64{}}, counts: map[string]int{}}
	}
	overall := newSums("overall", false)
	var order []string
	byCategory := map[string]*sums{}
	for i, q := range d.Questions {
		c := byCategory[q.Category]
		if c == nil {
			c = newSums(q.Category, q.Apart)
			byCategory[q.Category] = c
			order = append(order, q.Category)
		}
		add(c, scores[i])
		if !q.Apart {
			add(overall, scores[i])
		}
	}
	mean := func(s *sums) Figures {
		for k := range s.f.Values {
			s.f.Values[k] /= float64(s.counts[k])
		}
		return s.f
	}
	slices.SortFunc(order, func(a, b string) int {
		return cmp.Or(compareBool(byCategory[a].f.Apart, byCategory[b].f.Apart), cmp.Compare(a, b))
	})
	var cats []Figures
	for _, name := range order {
		cats = append(cats, mean(byCategory[name]))
	}
	return mean(overall), cats
}

func compareBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}
