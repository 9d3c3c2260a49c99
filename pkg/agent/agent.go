// Package agent runs one turn of a hosted agent: load the session, trim it
// with working memory, call the model and its tools until it answers, store
// the turn, index it and summarize if due.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"go.opentelemetry.io/otel/attribute"

	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/llm"
	"github.com/hectormem/hector/pkg/recall"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/state"
	"github.com/hectormem/hector/pkg/telemetry"
	"github.com/hectormem/hector/pkg/tool"
	"github.com/hectormem/hector/pkg/workingmemory"
)

// ErrBusy: another run holds the session and the agent rejects concurrent runs.
var ErrBusy = errors.New("another run is in progress on this session")

// ErrModel wraps a failed model call: the turn failed, the user's message is kept.
var ErrModel = errors.New("the model failed")

// Config describes an agent.
type Config struct {
	Name, App, Instruction string
	WorkingMemory          workingmemory.Config
	Search                 bool
	MaxResults             int
	// MaxSteps bounds model calls per turn (default 8).
	MaxSteps int
	// RejectConcurrent answers ErrBusy to a second run on a busy session;
	// by default runs on one session wait for each other.
	RejectConcurrent bool
	// Summarizer writes summary_buffer's summaries (default: the offline extractive one).
	Summarizer workingmemory.Summarizer
	// Facts gives the agent the memory_* tools; InjectFacts also puts the
	// most recent facts in the prompt as reference data.
	Facts       *facts.Tools
	InjectFacts bool
	// Remote is an optional Memory Gateway searched before and fed after each turn.
	Remote *RemoteMemory
	// Learn, when set, is told of each completed turn, to learn facts from
	// the conversation in the background (extract.Extractor does); it
	// never blocks the turn.
	Learn interface {
		Notify(app, user, sessionID string)
	}
	// Tools are more tools the model may call (an MCP server's, say).
	Tools []tool.Tool
}

// Runner runs an agent's turns. It is safe for concurrent use; runs on one
// session are serialised (or rejected), never interleaved.
type Runner struct {
	cfg      Config
	wm       workingmemory.Strategy
	model    *llm.Client
	sessions session.Service
	idx      index.Service
	tools    map[string]tool.Tool
	logger   *slog.Logger

	mu    sync.Mutex
	locks map[string]*sessionLock
}

// sessionLock is a one-slot semaphore that counts who waits for it.
type sessionLock struct {
	slot    chan struct{}
	waiting atomic.Int32
	refs    int // holders and waiters; guarded by Runner.mu
}

// New makes a runner. idx may be nil when search is off.
func New(cfg Config, model *llm.Client, sessions session.Service, idx index.Service, logger *slog.Logger) (*Runner, error) {
	opts := []workingmemory.Option{workingmemory.WithLogger(logger)}
	if cfg.Summarizer != nil {
		opts = append(opts, workingmemory.WithSummarizer(cfg.Summarizer))
	}
	wm, err := workingmemory.New(cfg.WorkingMemory, opts...)
	if err != nil {
		return nil, fmt.Errorf("agent %s: %w", cfg.Name, err)
	}
	if cfg.MaxSteps <= 0 {
		cfg.MaxSteps = 8
	}
	r := &Runner{cfg: cfg, wm: wm, model: model, sessions: sessions, idx: idx, tools: map[string]tool.Tool{}, logger: logger, locks: map[string]*sessionLock{}}
	if cfg.Search {
		if idx == nil {
			return nil, fmt.Errorf("agent %s: search is enabled but there is no index", cfg.Name)
		}
		t := &recall.SearchMemoryTool{Memory: recall.Memory{Index: idx}, MaxResults: cfg.MaxResults}
		if cfg.Facts != nil {
			t.Memory.Facts, t.FactScope = cfg.Facts.Facts, cfg.Facts.ScopeOf
		}
		r.tools[t.Name()] = t
	}
	if cfg.Facts != nil {
		for _, t := range cfg.Facts.List() {
			r.tools[t.Name()] = t
		}
	}
	for _, t := range cfg.Tools {
		if _, taken := r.tools[t.Name()]; taken {
			return nil, fmt.Errorf("agent %s: two tools are named %q", cfg.Name, t.Name())
		}
		r.tools[t.Name()] = t
	}
	return r, nil
}

// App is the app the agent's sessions belong to.
func (r *Runner) App() string { return r.cfg.App }

// Tools names the tools the agent's model may call, in order.
func (r *Runner) Tools() []string { return slices.Sorted(maps.Keys(r.tools)) }

// Request is one user message to the agent. An empty SessionID starts a new session.
type Request struct {
	UserID, SessionID, Message string
	// Approver: the caller's credential may approve writes to facts.
	Approver bool
}

// Result is a completed turn.
type Result struct {
	AppName   string           `json:"app_name"`
	UserID    string           `json:"user_id"`
	SessionID string           `json:"session_id"`
	Reply     string           `json:"reply"`
	Events    []*session.Event `json:"events"`
	// Metadata reports what went wrong after the reply was made (indexing,
	// summarizing): the turn stands, but someone should know.
	Metadata map[string]any `json:"metadata,omitempty"`
}

// Observer is told about a run as it happens, for streaming: kind is
// "text" (a piece of the reply), "tool_call" or "tool_result".
type Observer func(kind string, data any)

// Run runs one turn.
func (r *Runner) Run(ctx context.Context, req Request, observe Observer) (_ *Result, err error) {
	if strings.TrimSpace(req.Message) == "" {
		return nil, fmt.Errorf("%w: the message is empty", session.ErrInvalidArgument)
	}
	ctx, span := telemetry.Span(ctx, "agent.turn", attribute.String("hector.agent", r.cfg.Name), attribute.String("hector.app", r.cfg.App))
	defer func() { telemetry.End(span, err) }()
	if observe == nil {
		observe = func(string, any) {}
	}
	if req.SessionID == "" {
		req.SessionID = uuid.Must(uuid.NewV7()).String()
	}
	unlock, err := r.lock(ctx, r.cfg.App+"\x00"+req.UserID+"\x00"+req.SessionID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	sess, history, err := r.load(ctx, req)
	if err != nil {
		return nil, err
	}
	inv := tool.Invocation{AppName: r.cfg.App, UserID: req.UserID, SessionID: sess.ID(), InvocationID: uuid.Must(uuid.NewV7()).String(), Approver: req.Approver}
	turn := []*session.Event{{InvocationID: inv.InvocationID, Author: "user", Timestamp: time.Now(), Message: session.NewTextMessage(session.RoleUser, req.Message)}}

	var remote *llm.Message
	var audits []*session.Event
	if r.cfg.Remote != nil {
		var a *session.Event
		if remote, a = r.cfg.Remote.recall(ctx, req.UserID, sess.ID(), req.Message); a != nil {
			audits = append(audits, a)
		}
	}
	var cacheHits int
	reply, err := r.converse(withCacheHits(ctx, &cacheHits), inv, history, remote, &turn, observe)
	// What is stored must not depend on whether the client is still there.
	store := context.WithoutCancel(ctx)
	if err != nil {
		// A failed turn keeps the user's message and nothing else of it.
		if serr := r.sessions.AppendEvent(store, sess, turn[0]); serr != nil {
			return nil, errors.Join(err, fmt.Errorf("saving the message: %w", serr))
		}
		return nil, err
	}
	// The turn is stored whole or not at all: a tool call is never kept
	// without its result, nor a reply without the message it answers.
	if err := r.sessions.AppendEvents(store, sess, turn); err != nil {
		err = fmt.Errorf("storing the turn: %w", err)
		if len(turn) > 1 { // as a failed turn does, keep the user's message
			if serr := r.sessions.AppendEvent(store, sess, turn[0]); serr != nil {
				err = errors.Join(err, fmt.Errorf("saving the message: %w", serr))
			}
		}
		return nil, err
	}
	if r.cfg.Remote != nil {
		audits = append(audits, r.cfg.Remote.remember(store, req.UserID, sess.ID(), turn)...)
	}
	for _, a := range audits { // hidden from the model: they carry no message
		a.InvocationID = inv.InvocationID
		if err := r.sessions.AppendEvent(store, sess, a); err != nil {
			r.logger.Warn("storing a memory-gateway audit event failed", "session", sess.ID(), "error", err)
		}
	}
	res := &Result{AppName: r.cfg.App, UserID: req.UserID, SessionID: sess.ID(), Reply: reply, Events: turn, Metadata: map[string]any{}}
	if n := len(slices.DeleteFunc(slices.Clone(audits), func(a *session.Event) bool { return !failed(a) })); n > 0 {
		res.Metadata["memory_gateway_failures"] = n
	}
	if cacheHits > 0 { // tool calls answered from the cache, without running the tool
		res.Metadata["tool_cache_hits"] = cacheHits
	}
	if r.idx != nil {
		if err := r.idx.Index(store, sess); err != nil {
			r.logger.Warn("indexing the turn failed; the index catches up from the change feed", "session", sess.ID(), "error", err)
			res.Metadata["index_error"] = err.Error()
		}
	}
	summary, err := r.wm.CheckAndSummarize(store, append(history, turn...))
	switch {
	case err != nil:
		r.logger.Warn("summarizing failed; the session is unchanged", "session", sess.ID(), "error", err)
		res.Metadata["summary_error"] = err.Error()
	case summary != nil:
		summary.InvocationID = inv.InvocationID
		if err := r.sessions.AppendEvent(store, sess, summary); err != nil {
			res.Metadata["summary_error"] = err.Error()
		} else {
			res.Events = append(res.Events, summary)
		}
	}
	clearTemp(sess.State())
	if r.cfg.Learn != nil {
		r.cfg.Learn.Notify(r.cfg.App, req.UserID, sess.ID())
	}
	if len(res.Metadata) == 0 {
		res.Metadata = nil
	}
	return res, nil
}

// load reads the session (creating it if new) with as many recent events
// as the working-memory strategy can use.
func (r *Runner) load(ctx context.Context, req Request) (session.Session, []*session.Event, error) {
	resp, err := r.sessions.Get(ctx, &session.GetRequest{AppName: r.cfg.App, UserID: req.UserID, SessionID: req.SessionID, NumRecentEvents: eventsNeeded(r.cfg.WorkingMemory)})
	if errors.Is(err, session.ErrNotFound) {
		created, cerr := r.sessions.Create(ctx, &session.CreateRequest{AppName: r.cfg.App, UserID: req.UserID, SessionID: req.SessionID})
		if cerr != nil {
			return nil, nil, cerr
		}
		return created.Session, nil, nil
	} else if err != nil {
		return nil, nil, err
	}
	var history []*session.Event
	for ev := range resp.Session.Events().All() {
		history = append(history, ev)
	}
	return resp.Session, history, nil
}

// eventsNeeded is how many recent events a strategy can use (0: all).
// Twice the window leaves room for moving to a safe tool-call boundary and
// for the latest summary.
func eventsNeeded(c workingmemory.Config) int {
	or := func(v, def int) int {
		if v == 0 {
			return def
		}
		return v
	}
	switch c.Type {
	case "buffer_window":
		return 2 * or(c.MaxMessages, workingmemory.DefaultMaxMessages)
	case "summary_buffer":
		return 2 * or(c.MaxMessages, workingmemory.DefaultSummaryMessages)
	case "token_window": // an event costs at least a few tokens
		return or(c.MaxTokens, workingmemory.DefaultMaxTokens) / 3
	}
	return 0
}

// converse calls the model, runs the tools it asks for and calls it again,
// until it answers; the turn's events are added to *turn.
func (r *Runner) converse(ctx context.Context, inv tool.Invocation, history []*session.Event, remote *llm.Message, turn *[]*session.Event, observe Observer) (string, error) {
	var tools []llm.Tool
	for _, name := range slices.Sorted(maps.Keys(r.tools)) {
		t := r.tools[name]
		tools = append(tools, llm.Tool{Name: t.Name(), Description: t.Description(), Parameters: t.Parameters()})
	}
	var reference string // the user's facts: data for the model, kept apart from the instruction
	if r.cfg.Facts != nil && r.cfg.InjectFacts {
		view, err := r.cfg.Facts.Facts.Context(ctx, r.cfg.Facts.ScopeOf(inv), 20)
		if err != nil {
			return "", fmt.Errorf("reading facts for the prompt: %w", err)
		}
		reference = view.Text()
	}
	for step := 0; step < r.cfg.MaxSteps; step++ {
		visible := r.wm.FilterEvents(append(append([]*session.Event(nil), history...), *turn...))
		msgs := toMessages(r.cfg.Instruction, reference, visible)
		if remote != nil { // after the system messages, before the conversation
			at := 0
			for at < len(msgs) && msgs[at].Role == "system" {
				at++
			}
			msgs = slices.Insert(msgs, at, *remote)
		}
		resp, err := r.model.Stream(ctx, llm.Request{Messages: msgs, Tools: tools},
			func(text string) { observe("text", text) })
		if err != nil {
			return "", fmt.Errorf("%w: %w", ErrModel, err)
		}
		if len(resp.ToolCalls) == 0 {
			*turn = append(*turn, &session.Event{InvocationID: inv.InvocationID, Author: r.cfg.Name, Timestamp: time.Now(),
				Message: session.NewTextMessage(session.RoleAssistant, resp.Content)})
			return resp.Content, nil
		}
		call := &session.Event{InvocationID: inv.InvocationID, Author: r.cfg.Name, Timestamp: time.Now(), Message: &session.Message{Role: session.RoleAssistant}}
		if resp.Content != "" {
			call.Message.Parts = append(call.Message.Parts, session.Part{Type: session.PartText, Text: resp.Content})
		}
		results := &session.Event{InvocationID: inv.InvocationID, Author: "tool", Message: &session.Message{Role: session.RoleTool}}
		for _, tc := range resp.ToolCalls {
			if tc.ID == "" {
				tc.ID = "call_" + uuid.NewString()
			}
			var args map[string]any
			if err := json.Unmarshal([]byte(orEmpty(tc.Function.Arguments)), &args); err != nil {
				args = map[string]any{"_unparsed": tc.Function.Arguments}
			}
			call.Message.Parts = append(call.Message.Parts, session.Part{Type: session.PartToolCall, ToolCall: &session.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: args}})
			observe("tool_call", map[string]any{"id": tc.ID, "name": tc.Function.Name, "arguments": args})
			content, isErr := r.runTool(ctx, inv, tc)
			results.Message.Parts = append(results.Message.Parts, session.Part{Type: session.PartToolResult,
				ToolResult: &session.ToolResult{CallID: tc.ID, Name: tc.Function.Name, Content: content, IsError: isErr}})
			observe("tool_result", map[string]any{"call_id": tc.ID, "name": tc.Function.Name, "content": content, "is_error": isErr})
		}
		results.Timestamp = time.Now()
		*turn = append(*turn, call, results)
	}
	return "", fmt.Errorf("%w: no answer after %d steps of tool calls (raise the agent's step limit, or check its tools)", ErrModel, r.cfg.MaxSteps)
}

func orEmpty(args string) string {
	if strings.TrimSpace(args) == "" {
		return "{}"
	}
	return args
}

// runTool runs one call; errors become results the model can read.
func (r *Runner) runTool(ctx context.Context, inv tool.Invocation, tc llm.ToolCall) (any, bool) {
	t, ok := r.tools[tc.Function.Name]
	if !ok {
		return fmt.Sprintf("error: there is no tool named %q", tc.Function.Name), true
	}
	ctx, span := telemetry.Span(ctx, "execute_tool "+tc.Function.Name, attribute.String("gen_ai.operation.name", "execute_tool"),
		attribute.String("gen_ai.tool.name", tc.Function.Name))
	out, err := t.Call(ctx, inv, json.RawMessage(orEmpty(tc.Function.Arguments)))
	telemetry.End(span, err)
	if err != nil {
		return "error: " + err.Error(), true
	}
	// Stored as JSON values, so they read back exactly.
	raw, _ := json.Marshal(out)
	var v any
	json.Unmarshal(raw, &v)
	return v, false
}

// lock takes the session for one run: waiting, or failing with ErrBusy.
func (r *Runner) lock(ctx context.Context, key string) (func(), error) {
	r.mu.Lock()
	l := r.locks[key]
	if l == nil {
		l = &sessionLock{slot: make(chan struct{}, 1)}
		r.locks[key] = l
	}
	l.refs++
	r.mu.Unlock()
	done := func() { // the entry goes when nobody holds or wants it, so the map stays small
		r.mu.Lock()
		if l.refs--; l.refs == 0 {
			delete(r.locks, key)
		}
		r.mu.Unlock()
	}
	release := func() { <-l.slot; done() }
	select {
	case l.slot <- struct{}{}:
		return release, nil
	default:
	}
	if r.cfg.RejectConcurrent {
		done()
		return nil, ErrBusy
	}
	l.waiting.Add(1)
	defer l.waiting.Add(-1)
	select {
	case l.slot <- struct{}{}:
		return release, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}

// clearTemp drops temp: keys from the turn's session handle: they live for one invocation.
func clearTemp(st state.State) {
	var temp []string
	for k := range st.All() {
		if scope, _ := state.ScopeOf(k); scope == state.ScopeTemp {
			temp = append(temp, k)
		}
	}
	for _, k := range temp {
		st.Delete(k)
	}
}
