// Package extract learns facts from conversations: a model reads a
// session's messages and proposes durable facts about the user, which go
// through the facts service as written ones do (its policy, its
// consolidation, its history), with where they came from: the session,
// the events and the model.
//
// It is bounded: a token budget per app and hour and per app and day, a
// limit on calls at once, and the model client's backoff on 429s. What the
// model answers is checked against a schema; whatever does not fit is
// dropped and counted, never stored. Every run records a hidden audit
// event in the session: counts and refusal codes, never content.
//
// Extract runs on request; Notify, after an agent's turn, has a worker
// read the session a few turns at a time (background.go).
package extract

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/hectormem/hector/pkg/errkind"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/llm"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/telemetry"
)

// Model is the chat model extraction asks (llm.Client is one).
type Model interface {
	Complete(ctx context.Context, req llm.Request) (*llm.Response, error)
	Model() string
}

// Config configures an Extractor.
type Config struct {
	Model    Model
	Facts    *facts.Service
	Sessions session.Service
	// Budget bounds the tokens each app spends; zero fields are no limit.
	Budget Budget
	// Concurrency is how many calls run at once (default 2).
	Concurrency int
	// MaxEvents is how many messages one call reads (default 40): a
	// session's new turns are read together, in as few calls as that
	// allows.
	MaxEvents int
	// EveryTurns and IdleAfter say when the background worker reads a
	// session Notify told it of: after this many turns, or once it has
	// been quiet this long (defaults DefaultEveryTurns, DefaultIdleAfter).
	EveryTurns int
	IdleAfter  time.Duration
	Logger     *slog.Logger
	Clock      func() time.Time // default time.Now
}

// Budget is how many tokens (prompt and completion, as the model's server
// counts them) an app may spend on extraction per clock hour and per day
// (UTC).
type Budget struct {
	PerHour int `json:"per_hour"`
	PerDay  int `json:"per_day"`
}

// ErrBudgetSpent: the app's budget for this hour or day is spent; calls
// resume when the window turns (Retry says when).
var ErrBudgetSpent = errkind.New(errkind.Unavailable, "the extraction token budget is spent")

// BudgetError says when the budget allows calls again.
type BudgetError struct{ Retry time.Time }

func (e *BudgetError) Error() string {
	return fmt.Sprintf("%v until %s", ErrBudgetSpent, e.Retry.UTC().Format(time.RFC3339))
}

func (e *BudgetError) Unwrap() error { return ErrBudgetSpent }

// RetryAfter is how long to wait before trying again.
func (e *BudgetError) RetryAfter() time.Duration { return time.Until(e.Retry) }

// Extractor runs extractions.
type Extractor struct {
	cfg    Config
	budget *ledger
	slots  chan struct{}
	stats  Stats
	bg     background
	erasures
}

// Stats counts what extraction did since the process started.
type Stats struct {
	Calls, Tokens, Proposed, Stored, Dropped, Refused atomic.Int64
}

// New returns an Extractor for cfg.
func New(cfg Config) (*Extractor, error) {
	if cfg.Model == nil || cfg.Facts == nil || cfg.Sessions == nil {
		return nil, errors.New("extract: a model, the facts and the sessions are required")
	}
	if cfg.Budget.PerHour < 0 || cfg.Budget.PerDay < 0 {
		return nil, errors.New("extract: a token budget is negative")
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 2
	}
	if cfg.MaxEvents <= 0 {
		cfg.MaxEvents = 40
	}
	if cfg.EveryTurns <= 0 {
		cfg.EveryTurns = DefaultEveryTurns
	}
	if cfg.IdleAfter <= 0 {
		cfg.IdleAfter = DefaultIdleAfter
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	return &Extractor{cfg: cfg, budget: newLedger(cfg.Budget), slots: make(chan struct{}, cfg.Concurrency)}, nil
}

// Stats returns the running totals.
func (x *Extractor) Stats() *Stats { return &x.stats }

// Status is what extraction is and has done: its model, its budget, each
// app's spending in the current hour and day, and the totals since start.
type Status struct {
	Model  string           `json:"model"`
	Budget Budget           `json:"budget"`
	Apps   []AppUsage       `json:"apps"`
	Totals map[string]int64 `json:"totals"`
}

// Status reports the extractor's status now.
func (x *Extractor) Status() Status {
	st := &x.stats
	apps := x.budget.usage(x.cfg.Clock())
	if apps == nil {
		apps = []AppUsage{}
	}
	return Status{Model: x.cfg.Model.Model(), Budget: x.cfg.Budget, Apps: apps, Totals: map[string]int64{
		"calls": st.Calls.Load(), "tokens": st.Tokens.Load(), "proposed": st.Proposed.Load(), "stored": st.Stored.Load(),
		"dropped": st.Dropped.Load(), "refused": st.Refused.Load()}}
}

// Request names what to read: one session's messages with a sequence
// number in (AfterSeq, ToSeq]; ToSeq 0 is the session's last.
type Request struct {
	AppName, UserID, SessionID string
	AfterSeq, ToSeq            int64
	// SinceLastRun reads from where the session's last successful
	// extraction got to, as its audit event says, instead of AfterSeq.
	SinceLastRun bool
}

// Result is what one extraction did.
type Result struct {
	Calls       int          `json:"calls"`
	Tokens      int          `json:"tokens"`
	Events      int          `json:"events"`   // messages read
	Proposed    int          `json:"proposed"` // facts the model proposed
	Added       int          `json:"added"`
	Updated     int          `json:"updated"`
	Unchanged   int          `json:"unchanged"`
	Duplicates  int          `json:"duplicates"`
	Invalidated int          `json:"invalidated"`
	Dropped     int          `json:"dropped"`           // proposals that did not fit the schema
	Refused     []string     `json:"refused,omitempty"` // the policy's codes, one per refused proposal
	Facts       []facts.Fact `json:"facts"`             // the facts stored, updated or invalidated
	ToSeq       int64        `json:"to_seq"`            // the last event read
}

// Extract reads the request's messages and stores the facts the model
// finds in them, in the user's scope. The model's proposals pass the facts
// policy as any write does; a refusal is counted and audited, never stored.
func (x *Extractor) Extract(ctx context.Context, req Request) (out *Result, err error) {
	ctx, span := telemetry.Span(ctx, "extract", attribute.String("hector.app", req.AppName))
	defer func() {
		if out != nil {
			span.SetAttributes(attribute.Int("hector.events", out.Events), attribute.Int("hector.facts", len(out.Facts)))
		}
		telemetry.End(span, err)
	}()
	ctx, leave, err := x.enter(ctx, userKey{req.AppName, req.UserID})
	if err != nil {
		return nil, err
	}
	defer leave()
	resp, err := x.cfg.Sessions.Get(ctx, &session.GetRequest{AppName: req.AppName, UserID: req.UserID, SessionID: req.SessionID})
	if err != nil {
		return nil, err
	}
	if req.SinceLastRun {
		req.AfterSeq = lastExtracted(resp.Session)
	}
	if req.AfterSeq < 0 || req.ToSeq < 0 || req.ToSeq != 0 && req.ToSeq <= req.AfterSeq {
		return nil, fmt.Errorf("%w: after_seq %d and to_seq %d do not make a range", errkind.InvalidArgument, req.AfterSeq, req.ToSeq)
	}
	var msgs []*session.Event
	upTo := req.AfterSeq // the last event read, a message or not
	for ev := range resp.Session.Events().All() {
		if ev.Seq > req.AfterSeq && (req.ToSeq == 0 || ev.Seq <= req.ToSeq) {
			upTo = ev.Seq
			if readable(ev) {
				msgs = append(msgs, ev)
			}
		}
	}
	scope := facts.UserScope(req.AppName, req.UserID)
	out = &Result{Events: len(msgs), Facts: []facts.Fact{}, ToSeq: upTo}
	for batch := range slices.Chunk(msgs, x.cfg.MaxEvents) {
		if err = x.extractBatch(ctx, req, scope, batch, out); err != nil {
			break
		}
	}
	x.audit(ctx, resp.Session, out, err)
	return out, err
}

// readable reports whether an event is a message of the conversation: a
// user's or an assistant's text (not tools' results, summaries, nor
// audit events).
func readable(ev *session.Event) bool {
	return ev.Message != nil && !ev.IsSummary() && (ev.Message.Role == session.RoleUser || ev.Message.Role == session.RoleAssistant) &&
		strings.TrimSpace(ev.Message.Text()) != ""
}

func (x *Extractor) extractBatch(ctx context.Context, req Request, scope facts.Scope, batch []*session.Event, out *Result) error {
	if retry, ok := x.budget.allow(req.AppName, x.cfg.Clock()); !ok {
		return &BudgetError{Retry: retry}
	}
	held, err := x.related(ctx, scope, batch)
	if err != nil {
		return err
	}
	select {
	case x.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	asked := prompt(batch, held)
	answer, err := x.cfg.Model.Complete(ctx, asked)
	<-x.slots
	if err != nil {
		return fmt.Errorf("%w: extraction: the model (server.extraction.llm) failed: %w", errkind.Upstream, err)
	}
	tokens := chargedTokens(answer.Usage.Total(), asked, answer.Content)
	x.budget.spend(req.AppName, tokens, x.cfg.Clock())
	out.Calls++
	out.Tokens += tokens
	x.stats.Calls.Add(1)
	x.stats.Tokens.Add(int64(tokens))

	ids := map[string]bool{}
	for _, ev := range batch {
		ids[ev.ID] = true
	}
	proposals, dropped := parse(answer.Content, ids)
	out.Proposed += len(proposals) + dropped
	out.Dropped += dropped
	x.stats.Proposed.Add(int64(len(proposals) + dropped))
	x.stats.Dropped.Add(int64(dropped))
	for _, p := range proposals {
		if err := x.apply(ctx, req, scope, p, out); err != nil {
			return err
		}
	}
	return nil
}

// related is the user's facts a prompt shows, so that the model updates
// or invalidates one rather than adding it again: those that match the
// batch's messages, by words and meaning, then the newest, maxHeld in all.
func (x *Extractor) related(ctx context.Context, scope facts.Scope, batch []*session.Event) ([]facts.Fact, error) {
	var text strings.Builder
	for _, ev := range batch {
		text.WriteString(ev.Message.Text())
		text.WriteByte('\n')
	}
	matches, err := x.cfg.Facts.Search(ctx, scope, text.String(), maxHeld, time.Time{})
	if err != nil {
		return nil, err
	}
	newest, err := x.cfg.Facts.List(ctx, scope, "", "")
	if err != nil {
		return nil, err
	}
	shown := map[string]bool{}
	var out []facts.Fact
	for _, f := range append(factsOf(matches), newest...) {
		if !shown[f.Key] && len(out) < maxHeld {
			shown[f.Key] = true
			out = append(out, f)
		}
	}
	return out, nil
}

func factsOf(ms []facts.Match) []facts.Fact {
	out := make([]facts.Fact, len(ms))
	for i, m := range ms {
		out[i] = m.Fact
	}
	return out
}

// apply stores, updates or invalidates one proposal's fact.
func (x *Extractor) apply(ctx context.Context, req Request, scope facts.Scope, p proposal, out *Result) error {
	if p.Action == actionInvalidate {
		f, err := x.cfg.Facts.Invalidate(ctx, scope, p.Key)
		if errors.Is(err, facts.ErrNotFound) {
			out.Dropped++
			x.stats.Dropped.Add(1)
			return nil
		}
		if err != nil {
			return err
		}
		out.Invalidated++
		out.Facts = append(out.Facts, *f)
		return nil
	}
	src := facts.Source{Kind: facts.SourceExtracted, SessionID: req.SessionID, EventIDs: p.EventIDs, Model: x.cfg.Model.Model()}
	f, err := x.cfg.Facts.Store(ctx, scope, facts.StoreRequest{Key: p.Key, Value: p.Statement, Category: p.Category, Source: src,
		MergeDuplicates: true}) // what was learned before is renewed, not learned twice
	var refused *facts.ValidationError
	if errors.As(err, &refused) {
		out.Refused = append(out.Refused, refused.Code)
		x.stats.Refused.Add(1)
		return nil
	}
	if err != nil {
		return err
	}
	switch f.Decision {
	case facts.Added:
		out.Added++
	case facts.Updated:
		out.Updated++
	case facts.Unchanged:
		out.Unchanged++
		return nil
	case facts.Duplicate:
		out.Duplicates++
		return nil
	}
	x.stats.Stored.Add(1)
	out.Facts = append(out.Facts, *f)
	return nil
}

// AuditAuthor is the author of extraction's audit events.
const AuditAuthor = "hector:extract"

// audit records the run in the session as a hidden event (no message, so
// no model sees it): what it did in numbers, and the policy's codes for
// what it refused, never content.
func (x *Extractor) audit(ctx context.Context, s session.Session, out *Result, failed error) {
	record := map[string]any{"operation": "extract", "outcome": "ok", "model": x.cfg.Model.Model(), "calls": out.Calls, "tokens": out.Tokens,
		"events": out.Events, "proposed": out.Proposed, "added": out.Added, "updated": out.Updated, "unchanged": out.Unchanged,
		"duplicates": out.Duplicates, "invalidated": out.Invalidated, "dropped": out.Dropped, "refused": slices.Clone(out.Refused), "to_seq": out.ToSeq}
	if failed != nil {
		record["outcome"] = "failed"
		record["category"] = "error"
		if errors.Is(failed, ErrBudgetSpent) {
			record["category"] = "budget_spent"
		}
	}
	ev := &session.Event{Author: AuditAuthor, Timestamp: x.cfg.Clock(), Metadata: map[string]any{"audit": record}}
	if err := x.cfg.Sessions.AppendEvent(context.WithoutCancel(ctx), s, ev); err != nil {
		x.cfg.Logger.Warn("extract: recording the audit event failed", "app", s.AppName(), "session", s.ID(), "error", err)
	}
}
