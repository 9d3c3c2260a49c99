package server

import (
	"context"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hectormem/hector/pkg/app"
	"github.com/hectormem/hector/pkg/session"
)

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

// readyz says whether every store answers, naming the ones that do not
// (never why: the reasons, addresses included, go to the log), how many
// documents the index skipped, how far a starting index has yet to catch
// up, and how many changes still wait for their vectors.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	out := map[string]any{"status": "ok"}
	status := http.StatusOK
	if unready := s.svcs.Unready(ctx); len(unready) > 0 {
		names := slices.Sorted(maps.Keys(unready))
		for _, name := range names {
			s.logger.Warn("not ready", "store", name, "error", unready[name])
		}
		out["status"], out["unavailable"] = "unavailable", names
		status = http.StatusServiceUnavailable
		w.Header().Set("Retry-After", retryAfterSeconds)
	}
	if skipped := s.svcs.Index.Skipped().Total; skipped > 0 {
		out["index_skipped_documents"] = skipped
	}
	// Ready: sessions are served; searches say the same until it is built.
	if err := indexHealing(ctx, s.svcs); err != nil {
		out["index_healing"] = err.Error()
	}
	// Ready, and still applying what the feed recorded before it started,
	// or embedding behind the terms (all of it again after the embedder
	// changed): searches answer meanwhile from what is applied, by words
	// where a vector is still to come.
	catchingUp := false
	if c, ok := s.svcs.Index.(interface{ CatchingUp() bool }); ok {
		catchingUp = c.CatchingUp()
	}
	if _, background, err := s.svcs.Index.VectorCursor(ctx); err == nil && (catchingUp || background) {
		if l, err := indexLag(ctx, s.svcs); err == nil {
			if catchingUp {
				out["index_catching_up"] = map[string]int64{"changes_behind": l.terms}
			}
			if background && l.vectors > 0 {
				out["index_embedding"] = map[string]int64{"changes_behind": l.vectors}
			}
		}
	}
	writeJSON(w, status, out)
	return nil
}

type metrics struct {
	registry      *prometheus.Registry
	requests      *prometheus.HistogramVec
	appendLatency prometheus.Histogram
	searchLatency prometheus.Histogram
}

func newMetrics(svcs *app.Services) *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "hector_http_request_duration_seconds", Help: "HTTP request latency by route and status.", Buckets: prometheus.DefBuckets,
		}, []string{"route", "code"}),
		appendLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "hector_append_duration_seconds", Help: "Latency of storing one event.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
		searchLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "hector_search_duration_seconds", Help: "Latency of one memory search.", Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16),
		}),
	}
	lag := func(vectors bool) func() float64 {
		return func() float64 {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			l, err := indexLag(ctx, svcs)
			switch {
			case err != nil:
				return -1
			case vectors:
				return float64(l.vectors)
			}
			return float64(l.terms)
		}
	}
	termsLag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "hector_index_lag_changes", Help: "How many change-feed entries the index has not applied yet.",
	}, lag(false))
	vectorLag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "hector_index_vector_lag_changes", Help: "How many change-feed entries have no vectors yet: as many as hector_index_lag_changes unless vectors are embedded in the background.",
	}, lag(true))
	skipped := prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "hector_index_skipped_documents_total", Help: "Documents the index store refused, which the index went on without (GET /v1/index names them).",
	}, func() float64 { return float64(svcs.Index.Skipped().Total) })
	if x := svcs.Extractor; x != nil {
		st := x.Stats()
		for _, c := range []struct {
			name, help string
			n          *atomic.Int64
		}{
			{"calls", "Calls to the extraction model.", &st.Calls},
			{"tokens", "Tokens extraction spent, as the model's server counts them.", &st.Tokens},
			{"proposed", "Facts the extraction model proposed.", &st.Proposed},
			{"stored", "Extracted facts stored or updated.", &st.Stored},
			{"dropped", "Proposals dropped as not fitting the schema.", &st.Dropped},
			{"refused", "Proposals the facts policy refused.", &st.Refused},
		} {
			m.registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "hector_extraction_" + c.name + "_total", Help: c.help},
				func() float64 { return float64(c.n.Load()) }))
		}
	}
	m.registry.MustRegister(m.requests, m.appendLatency, m.searchLatency, termsLag, vectorLag, skipped,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) observe(route string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, strconv.Itoa(code)).Observe(d.Seconds())
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	return nil
}

// lags is how many change-feed entries the index has not applied yet, and
// how many have no vectors yet.
type lags struct {
	terms, vectors int64
	background     bool // vectors are embedded after the terms
}

// indexHealing says why and how far the index in process is being built
// again from the sessions (index.ErrHealing), nil when it is not.
func indexHealing(ctx context.Context, svcs *app.Services) error {
	if h, ok := svcs.Index.(interface{ Healing(context.Context) error }); ok {
		return h.Healing(ctx)
	}
	return nil
}

func indexLag(ctx context.Context, svcs *app.Services) (lags, error) {
	cursor, err := svcs.Index.Cursor(ctx)
	if err != nil {
		return lags{}, err
	}
	vectors, background, err := svcs.Index.VectorCursor(ctx)
	if err != nil {
		return lags{}, err
	}
	resp, err := svcs.Sessions.Changes(ctx, &session.ChangesRequest{After: cursor, Limit: 1})
	if err != nil {
		return lags{}, err
	}
	// Past the head is caught up: an erasure removed the newest changes,
	// which the index had applied.
	return lags{terms: max(resp.Head-cursor, 0), vectors: max(resp.Head-vectors, 0), background: background}, nil
}
