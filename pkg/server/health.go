package server

import (
	"context"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/session"
)

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	if err := s.svcs.Ready(ctx); err != nil {
		s.logger.Warn("not ready", "error", err)
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
		return nil
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	return nil
}

type metrics struct {
	registry      *prometheus.Registry
	requests      *prometheus.HistogramVec
	appendLatency prometheus.Histogram
	searchLatency prometheus.Histogram
}

func newMetrics(svcs *config.Services) *metrics {
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
	lag := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "hector_index_lag_changes", Help: "How many change-feed entries the index has not applied yet.",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		lag, err := indexLag(ctx, svcs)
		if err != nil {
			return -1
		}
		return float64(lag)
	})
	m.registry.MustRegister(m.requests, m.appendLatency, m.searchLatency, lag,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

func (m *metrics) observe(route string, code int, d time.Duration) {
	m.requests.WithLabelValues(route, http.StatusText(code)).Observe(d.Seconds())
}

func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	promhttp.HandlerFor(s.metrics.registry, promhttp.HandlerOpts{}).ServeHTTP(w, r)
	return nil
}

// indexLag is how many change-feed entries the index has not applied yet.
func indexLag(ctx context.Context, svcs *config.Services) (int64, error) {
	cursor, err := svcs.Index.Cursor(ctx)
	if err != nil {
		return 0, err
	}
	resp, err := svcs.Sessions.Changes(ctx, &session.ChangesRequest{After: cursor, Limit: 1})
	if err != nil {
		return 0, err
	}
	return resp.Head - cursor, nil
}
