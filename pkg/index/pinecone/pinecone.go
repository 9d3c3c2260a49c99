// Package pinecone keeps a vector index in Pinecone, through Pinecone's
// documented REST data-plane API (upsert, query, fetch, list, delete,
// describe_index_stats) on an index's host.
//
// Why REST and not the official Go client: go-pinecone's data plane speaks
// gRPC with message types generated into an internal package of its
// module. A faithful in-process test server would have to copy those
// generated internals, so tests could not exercise the real client on the
// real wire. The REST API is Pinecone's own, documented and versioned
// (X-Pinecone-API-Version), and is what the tests here serve.
//
// Isolation: each (app, user) is a namespace of its own (a hash of both),
// and every upsert, query, fetch, list and delete names it; results' app and
// user are checked again.
//
// Every call first reads which generation is live (one fetch), so a
// rebuild run by another process is followed at once.
//
// Rebuilds: a namespace's name starts with its generation, g<n>-. The live
// generation and the fingerprint of how its documents were made are one
// record in the namespace hector-meta; a full rebuild fills generation n+1
// and switches by rewriting that record, then deletes the old namespaces.
package pinecone

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/hectormem/hector/pkg/index"
)

// APIVersion is the data-plane API version Hector speaks.
const APIVersion = "2025-04"

// Config points at a Pinecone index.
type Config struct {
	// Host is the index's data-plane host, such as
	// https://memory-abc123.svc.us-east1-gcp.pinecone.io.
	Host string
	// APIKey, read from the environment; it never appears in errors or logs.
	APIKey string
}

const (
	metaNamespace = "hector-meta"
	metaID        = "live"
	// upsertBatch keeps an upsert under Pinecone's 2 MB per request (each
	// vector carries up to maxText of text); deleteBatch is its cap on IDs.
	upsertBatch = 100
	deleteBatch = 1000
	// maxText bounds the text kept in a vector's metadata, which Pinecone
	// caps at 40 KB.
	maxText = 30_000
)

// Store is an index.Store on a Pinecone index (vector indexes only).
type Store struct {
	host   string
	key    string
	client *http.Client
}

var _ index.Store = (*Store)(nil)

// New returns a store for cfg; it connects on Open.
func New(cfg Config) (*Store, error) {
	u, err := url.Parse(cfg.Host)
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, fmt.Errorf("%w: Pinecone host %q is not an https:// URL (the index's host, from its description)", index.ErrInvalidArgument, cfg.Host)
	}
	return &Store{host: strings.TrimRight(cfg.Host, "/"), key: cfg.APIKey, client: &http.Client{Timeout: 30 * time.Second}}, nil
}

func (s *Store) Name() string {
	return "pinecone at " + strings.TrimPrefix(strings.TrimPrefix(s.host, "https://"), "http://")
}

func (s *Store) Close() error { return nil }

// apiError is an answer other than 2xx.
type apiError struct {
	Status  int
	Message string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("Pinecone answered %d: %s", e.Status, e.Message)
}

func notFound(err error) bool {
	var ae *apiError
	return errors.As(err, &ae) && ae.Status == http.StatusNotFound
}

// call sends one request and decodes the answer into out (when not nil).
func (s *Store) call(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.host+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Api-Key", s.key)
	req.Header.Set("X-Pinecone-API-Version", APIVersion)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return fmt.Errorf("calling %s: %w", s.Name(), errors.Unwrap(err))
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Message string `json:"message"`
			Error   struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		json.Unmarshal(raw, &e)
		msg := e.Message
		if msg == "" {
			msg = e.Error.Message
		}
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		return &apiError{resp.StatusCode, msg}
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("the answer of Pinecone to %s is not the JSON expected: %w", path, err)
		}
	}
	return nil
}

func (s *Store) Ready(ctx context.Context) error {
	return s.call(ctx, http.MethodPost, "/describe_index_stats", map[string]any{}, nil)
}

type vector struct {
	ID       string         `json:"id"`
	Values   []float32      `json:"values,omitempty"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// layout is how this version writes vectors' metadata: 2 added time_ms, a
// number that time filters compare (Pinecone compares numbers only). An
// index written another way must be rebuilt.
const layout = 2

// live reads the live generation and its fingerprint (0 and "" if none).
// A generation written with an older layout has its fingerprint marked so,
// which no configuration makes.
func (s *Store) live(ctx context.Context) (int, string, error) {
	var out struct {
		Vectors map[string]vector `json:"vectors"`
	}
	err := s.call(ctx, http.MethodGet, "/vectors/fetch?"+url.Values{"ids": {metaID}, "namespace": {metaNamespace}}.Encode(), nil, &out)
	if err != nil && !notFound(err) {
		return 0, "", err
	}
	v, ok := out.Vectors[metaID]
	if !ok {
		return 0, "", nil
	}
	gen, _ := v.Metadata["generation"].(float64)
	fp, _ := v.Metadata["fingerprint"].(string)
	if l, _ := v.Metadata["layout"].(float64); l < layout {
		fp += " (written by an older Hector, whose vectors cannot be filtered by time)"
	}
	return int(gen), fp, nil
}

// setLive makes gen the live generation, made by fingerprint. The record
// needs a vector of the index's dimension, which nothing ever searches.
func (s *Store) setLive(ctx context.Context, gen, dims int, fingerprint string) error {
	values := make([]float32, dims)
	values[0] = 1
	return s.call(ctx, http.MethodPost, "/vectors/upsert", map[string]any{"namespace": metaNamespace,
		"vectors": []vector{{ID: metaID, Values: values, Metadata: map[string]any{"generation": gen, "fingerprint": fingerprint, "layout": layout}}}}, nil)
}

func (s *Store) Open(ctx context.Context, schema index.Schema) error {
	if schema.Dimensions == 0 {
		return fmt.Errorf("%w: the pinecone store holds vector indexes only", index.ErrInvalidArgument)
	}
	gen, fp, err := s.live(ctx)
	if err != nil {
		return err
	}
	if gen == 0 {
		// First start. Another replica doing the same at once writes the
		// same record.
		gen, fp = 1, schema.Fingerprint
		if err := s.setLive(ctx, gen, schema.Dimensions, fp); err != nil {
			return err
		}
	}
	if fp != schema.Fingerprint {
		return fmt.Errorf("%w: Pinecone index %s was built by %q and this configuration makes %q", index.ErrNeedsRebuild, s.Name(), fp, schema.Fingerprint)
	}
	return nil
}

// namespace names an owner's namespace in a generation.
func namespace(gen int, o index.Owner) string { return "g" + strconv.Itoa(gen) + "-" + o.Key()[:40] }

// liveNamespace is the owner's namespace in the live generation, read
// afresh each time: a rebuild by another process switches it.
func (s *Store) liveNamespace(ctx context.Context, o index.Owner) (string, error) {
	gen, _, err := s.live(ctx)
	if err != nil {
		return "", err
	}
	return namespace(max(gen, 1), o), nil
}

// vectorID names a document so that a session's documents share a prefix:
// a session is listed (and deleted) by prefix.
func vectorID(o index.Owner, sessionID, eventID string) string {
	return sessionPrefix(o, sessionID) + index.DocumentID(o, sessionID, eventID)
}

func sessionPrefix(o index.Owner, sessionID string) string {
	return index.DocumentID(o, sessionID, "")[:8] + "#"
}

func (s *Store) Write(ctx context.Context, o index.Owner, docs []index.StoredDoc) error {
	ns, err := s.liveNamespace(ctx, o)
	if err != nil {
		return err
	}
	return s.write(ctx, ns, o, docs)
}

func (s *Store) write(ctx context.Context, ns string, o index.Owner, docs []index.StoredDoc) error {
	for len(docs) > 0 {
		n := min(len(docs), upsertBatch)
		vectors := make([]vector, n)
		for i, d := range docs[:n] {
			text, truncated := d.Text, false
			if len(text) > maxText {
				text, truncated = validUTF8Prefix(text, maxText), true
			}
			vectors[i] = vector{ID: vectorID(o, d.SessionID, d.EventID), Values: d.Vector, Metadata: map[string]any{
				"app": o.App, "user": o.User, "session": d.SessionID, "event": d.EventID, "author": d.Author, "role": d.Role,
				"seq": d.Seq, "time": d.Timestamp.Format(time.RFC3339Nano), "time_ms": d.Timestamp.UnixMilli(), "text": text, "truncated": truncated,
			}}
		}
		if err := s.call(ctx, http.MethodPost, "/vectors/upsert", map[string]any{"namespace": ns, "vectors": vectors}, nil); err != nil {
			return err
		}
		docs = docs[n:]
	}
	return nil
}

func validUTF8Prefix(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// list returns the IDs in ns that start with prefix.
func (s *Store) list(ctx context.Context, ns, prefix string) ([]string, error) {
	var ids []string
	token := ""
	for {
		q := url.Values{"namespace": {ns}, "limit": {"100"}}
		if prefix != "" {
			q.Set("prefix", prefix)
		}
		if token != "" {
			q.Set("paginationToken", token)
		}
		var out struct {
			Vectors []struct {
				ID string `json:"id"`
			} `json:"vectors"`
			Pagination *struct {
				Next string `json:"next"`
			} `json:"pagination"`
		}
		if err := s.call(ctx, http.MethodGet, "/vectors/list?"+q.Encode(), nil, &out); err != nil {
			if notFound(err) { // a namespace comes to exist with its first vector
				return ids, nil
			}
			return nil, err
		}
		for _, v := range out.Vectors {
			ids = append(ids, v.ID)
		}
		if out.Pagination == nil || out.Pagination.Next == "" {
			return ids, nil
		}
		token = out.Pagination.Next
	}
}

func (s *Store) deleteIDs(ctx context.Context, ns string, ids []string) error {
	for len(ids) > 0 {
		n := min(len(ids), deleteBatch)
		err := s.call(ctx, http.MethodPost, "/vectors/delete", map[string]any{"namespace": ns, "ids": ids[:n]}, nil)
		if err != nil && !notFound(err) {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

func (s *Store) DeleteSession(ctx context.Context, o index.Owner, sessionID string) error {
	ns, err := s.liveNamespace(ctx, o)
	if err != nil {
		return err
	}
	return s.deleteSession(ctx, ns, o, sessionID)
}

func (s *Store) deleteSession(ctx context.Context, ns string, o index.Owner, sessionID string) error {
	ids, err := s.list(ctx, ns, sessionPrefix(o, sessionID))
	if err != nil {
		return err
	}
	return s.deleteIDs(ctx, ns, ids)
}

// fetch returns the vectors of ids that exist in ns, by ID.
func (s *Store) fetch(ctx context.Context, ns string, ids []string) (map[string]vector, error) {
	found := map[string]vector{}
	for len(ids) > 0 {
		n := min(len(ids), 100)
		var out struct {
			Vectors map[string]vector `json:"vectors"`
		}
		err := s.call(ctx, http.MethodGet, "/vectors/fetch?"+url.Values{"ids": ids[:n], "namespace": {ns}}.Encode(), nil, &out)
		if err != nil && !notFound(err) {
			return nil, err
		}
		for id, v := range out.Vectors {
			found[id] = v
		}
		ids = ids[n:]
	}
	return found, nil
}

func (s *Store) Missing(ctx context.Context, o index.Owner, sessionID string, eventIDs []string) ([]string, error) {
	ids := make([]string, len(eventIDs))
	for i, e := range eventIDs {
		ids[i] = vectorID(o, sessionID, e)
	}
	ns, err := s.liveNamespace(ctx, o)
	if err != nil {
		return nil, err
	}
	found, err := s.fetch(ctx, ns, ids)
	if err != nil {
		return nil, err
	}
	var missing []string
	for i, e := range eventIDs {
		if _, ok := found[ids[i]]; !ok {
			missing = append(missing, e)
		}
	}
	return missing, nil
}

func (s *Store) Search(ctx context.Context, o index.Owner, q index.StoreQuery) ([]index.SearchResult, error) {
	if q.Vector == nil {
		return nil, fmt.Errorf("%w: the pinecone store holds vector indexes only", index.ErrInvalidArgument)
	}
	var out struct {
		Matches []struct {
			ID       string         `json:"id"`
			Score    float64        `json:"score"`
			Metadata map[string]any `json:"metadata"`
		} `json:"matches"`
	}
	ns, err := s.liveNamespace(ctx, o)
	if err != nil {
		return nil, err
	}
	req := map[string]any{"namespace": ns, "vector": q.Vector, "topK": q.Limit, "includeMetadata": true, "includeValues": false}
	if filter := filterOf(q.Filter); filter != nil {
		req["filter"] = filter
	}
	err = s.call(ctx, http.MethodPost, "/query", req, &out)
	if err != nil {
		if notFound(err) { // a user with no memory yet
			return nil, nil
		}
		return nil, err
	}
	results := make([]index.SearchResult, 0, len(out.Matches))
	for _, m := range out.Matches {
		md := m.Metadata
		if str(md["app"]) != o.App || str(md["user"]) != o.User {
			return nil, errors.New("the Pinecone index returned a vector outside the requested (app, user)")
		}
		ts, _ := time.Parse(time.RFC3339Nano, str(md["time"]))
		seq, _ := md["seq"].(float64)
		d := index.Document{SessionID: str(md["session"]), EventID: str(md["event"]), Seq: int64(seq), Author: str(md["author"]),
			Role: str(md["role"]), Timestamp: ts, Text: str(md["text"])}
		results = append(results, d.Result(m.Score))
	}
	return results, nil
}

// filterOf is the metadata filter that keeps what f keeps, nil for none.
// Times compare as milliseconds: Filter.Window is a millisecond wider.
func filterOf(f index.Filter) map[string]any {
	var and []any
	for _, c := range []struct{ field, value string }{{"session", f.SessionID}, {"author", f.Author}, {"role", f.Role}} {
		if c.value != "" {
			and = append(and, map[string]any{c.field: map[string]any{"$eq": c.value}})
		}
	}
	from, to := f.Window()
	if !from.IsZero() {
		and = append(and, map[string]any{"time_ms": map[string]any{"$gte": from.UnixMilli()}})
	}
	if !to.IsZero() {
		and = append(and, map[string]any{"time_ms": map[string]any{"$lte": to.UnixMilli()}})
	}
	if and == nil {
		return nil
	}
	return map[string]any{"$and": and}
}

func str(v any) string { s, _ := v.(string); return s }

// DropOwner deletes the owner's namespace, whose name is a hash of them,
// with whatever it still holds.
func (s *Store) DropOwner(ctx context.Context, o index.Owner) error {
	ns, err := s.liveNamespace(ctx, o)
	if err != nil {
		return err
	}
	if err := s.call(ctx, http.MethodPost, "/vectors/delete", map[string]any{"namespace": ns, "deleteAll": true}, nil); err != nil && !notFound(err) {
		return err
	}
	return nil
}

func (s *Store) Prune(ctx context.Context, o index.Owner, keep func(sessionID, eventID string) bool) error {
	ns, err := s.liveNamespace(ctx, o)
	if err != nil {
		return err
	}
	ids, err := s.list(ctx, ns, "")
	if err != nil {
		return err
	}
	found, err := s.fetch(ctx, ns, ids)
	if err != nil {
		return err
	}
	var drop []string
	for id, v := range found {
		if !keep(str(v.Metadata["session"]), str(v.Metadata["event"])) {
			drop = append(drop, id)
		}
	}
	return s.deleteIDs(ctx, ns, drop)
}

// namespaces lists the index's namespaces.
func (s *Store) namespaces(ctx context.Context) ([]string, error) {
	var out struct {
		Namespaces map[string]any `json:"namespaces"`
	}
	if err := s.call(ctx, http.MethodPost, "/describe_index_stats", map[string]any{}, &out); err != nil {
		return nil, err
	}
	var names []string
	for name := range out.Namespaces {
		names = append(names, name)
	}
	return names, nil
}

// dropGeneration deletes every namespace of generation gen.
func (s *Store) dropGeneration(ctx context.Context, gen int) error {
	names, err := s.namespaces(ctx)
	if err != nil {
		return err
	}
	prefix := "g" + strconv.Itoa(gen) + "-"
	for _, name := range names {
		if strings.HasPrefix(name, prefix) {
			err := s.call(ctx, http.MethodPost, "/vectors/delete", map[string]any{"namespace": name, "deleteAll": true}, nil)
			if err != nil && !notFound(err) {
				return err
			}
		}
	}
	return nil
}

// Begin starts the next generation, clearing what an unfinished rebuild
// may have left of it.
func (s *Store) Begin(ctx context.Context, schema index.Schema) (index.StoreBuild, error) {
	if schema.Dimensions == 0 {
		return nil, fmt.Errorf("%w: the pinecone store holds vector indexes only", index.ErrInvalidArgument)
	}
	gen, _, err := s.live(ctx)
	if err != nil {
		return nil, err
	}
	next := gen + 1
	if err := s.dropGeneration(ctx, next); err != nil {
		return nil, err
	}
	return &build{s: s, gen: next, old: gen, schema: schema}, nil
}

type build struct {
	s        *Store
	gen, old int
	schema   index.Schema
}

func (b *build) Write(ctx context.Context, o index.Owner, docs []index.StoredDoc) error {
	return b.s.write(ctx, namespace(b.gen, o), o, docs)
}

func (b *build) DeleteSession(ctx context.Context, o index.Owner, sessionID string) error {
	return b.s.deleteSession(ctx, namespace(b.gen, o), o, sessionID)
}

// Commit rewrites the one record that says which generation is live.
func (b *build) Commit(ctx context.Context) error {
	if err := b.s.setLive(ctx, b.gen, b.schema.Dimensions, b.schema.Fingerprint); err != nil {
		return err
	}
	if b.old > 0 {
		// Best effort: a leftover old generation costs storage, never results.
		_ = b.s.dropGeneration(ctx, b.old)
	}
	return nil
}

func (b *build) Abort(ctx context.Context) error { return b.s.dropGeneration(ctx, b.gen) }

// Drop deletes every generation and the live record.
func (s *Store) Drop(ctx context.Context) error {
	names, err := s.namespaces(ctx)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := s.call(ctx, http.MethodPost, "/vectors/delete", map[string]any{"namespace": name, "deleteAll": true}, nil); err != nil && !notFound(err) {
			return err
		}
	}
	return nil
}
