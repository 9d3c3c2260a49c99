package workingmemory

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/hectormem/hector/pkg/session"

	"go.opentelemetry.io/otel/attribute"

	"github.com/hectormem/hector/pkg/telemetry"
)

// SummaryAuthor is the author of the summary events summary_buffer makes.
const SummaryAuthor = "working_memory"

// summaryBuffer keeps a running summary: once more than threshold events
// follow the latest summary, the older ones are summarized (with the
// previous summary, never the whole history again) into a new summary
// event that names the range it replaces.
type summaryBuffer struct {
	maxMessages, threshold, keepRecent int
	summarizer                         Summarizer
	logger                             *slog.Logger
}

func newSummaryBuffer(cfg Config, d deps) (*summaryBuffer, error) {
	s := &summaryBuffer{
		maxMessages: or(cfg.MaxMessages, DefaultSummaryMessages),
		threshold:   or(cfg.SummaryThreshold, DefaultSummaryThreshold),
		summarizer:  d.summarizer,
		logger:      d.logger,
	}
	s.keepRecent = or(cfg.KeepRecent, max(1, s.threshold/2))
	if s.threshold > s.maxMessages {
		return nil, fieldError("summary_threshold", "%d is over max_messages (%d): events would leave the window before being summarized", s.threshold, s.maxMessages)
	}
	if s.keepRecent >= s.threshold {
		return nil, fieldError("keep_recent", "%d must be under summary_threshold (%d)", s.keepRecent, s.threshold)
	}
	if s.summarizer == nil {
		s.summarizer = NewExtractive(0)
	}
	return s, nil
}

func (*summaryBuffer) Name() string { return "summary_buffer" }

// FilterEvents shows the latest summary and the events after its range,
// at most max_messages of them.
func (s *summaryBuffer) FilterEvents(events []*session.Event) []*session.Event {
	return windowByCount(newHistory(events), s.maxMessages, s.logger)
}

func (s *summaryBuffer) CheckAndSummarize(ctx context.Context, events []*session.Event) (*session.Event, error) {
	var latest *session.Event
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].IsSummary() {
			latest = events[i]
			break
		}
	}
	// Only stored events (Seq > 0) can be named by a range.
	var pending []*session.Event
	for _, ev := range events {
		if ev.Seq > 0 && !ev.IsSummary() && !isSystem(ev) && (latest == nil || ev.Seq > latest.Actions.Summary.LastSeq) {
			pending = append(pending, ev)
		}
	}
	if len(pending) <= s.threshold {
		return nil, nil
	}
	// Keep the newest events, starting where no tool result is cut from its call.
	safe := safeStarts(pending)
	cut := -1
	for c := len(pending) - s.keepRecent; c > 0; c-- {
		if safe[c] {
			cut = c
			break
		}
	}
	if cut <= 0 {
		return nil, nil // one unbroken run of tool calls: nothing can go yet
	}
	evicted := pending[:cut]
	previous := ""
	first := evicted[0].Seq
	if latest != nil {
		previous = latest.Message.Text()
		first = latest.Actions.Summary.FirstSeq
	}
	ctx, span := telemetry.Span(ctx, "workingmemory.summarize", attribute.Int("hector.events", len(evicted)))
	text, err := s.summarizer.Summarize(ctx, previous, evicted)
	telemetry.End(span, err)
	if err != nil {
		return nil, fmt.Errorf("working memory: summarizing %d events: %w", len(evicted), err)
	}
	return &session.Event{
		Author:    SummaryAuthor,
		Timestamp: time.Now(),
		Message:   session.NewTextMessage(session.RoleSystem, text),
		Actions:   session.Actions{Summary: &session.SummaryRange{FirstSeq: first, LastSeq: evicted[len(evicted)-1].Seq}},
	}, nil
}
