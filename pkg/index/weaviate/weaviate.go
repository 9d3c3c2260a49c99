// Package weaviate keeps a Hector index in Weaviate, through its official
// Go client: BM25 over Hector's own terms and nearest neighbours over
// Hector's own vectors (Weaviate vectorizes nothing); a hybrid index runs
// both and fuses them as it does in process.
//
// Isolation: each (app, user) is its own Weaviate tenant. A tenant is a
// separate shard on disk, so a query cannot reach another user's objects
// whatever its arguments, and BM25's statistics are per user as they are
// in process. Every result's app and user are checked again anyway, so a
// misbehaving server cannot leak another user's memory.
//
// Rebuilds: the live collection is reached through an alias (the
// configured name) pointing at a physical collection <name>_G<n>. A full
// rebuild fills <name>_G<n+1> and switches the alias, so searches never
// see a half-built collection. The collection's description records the
// fingerprint of how its documents were made.
package weaviate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-openapi/strfmt"
	wv "github.com/weaviate/weaviate-go-client/v5/weaviate"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/alias"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/auth"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/fault"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/filters"
	"github.com/weaviate/weaviate-go-client/v5/weaviate/graphql"
	wvgrpc "github.com/weaviate/weaviate-go-client/v5/weaviate/grpc"
	"github.com/weaviate/weaviate/entities/models"

	"github.com/hectormem/hector/pkg/index"
)

// Config points at a Weaviate server.
type Config struct {
	// URL of its REST API, such as http://localhost:8080.
	URL string
	// GRPCAddress (host:port), when set, carries batch writes over gRPC.
	GRPCAddress string
	// APIKey, read from the environment; it never appears in errors or logs.
	APIKey string
	// Collection is the alias every replica uses (default "HectorMemory").
	Collection string
}

// DefaultCollection is the collection name when the config gives none.
const DefaultCollection = "HectorMemory"

// Store is an index.Store on Weaviate.
type Store struct {
	client *wv.Client
	host   string
	alias  string
	warned atomic.Bool // the BlockMax warning is logged once
}

var _ index.Store = (*Store)(nil)

// New returns a store for cfg; it connects on Open.
func New(cfg Config) (*Store, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return nil, fmt.Errorf("%w: Weaviate URL %q is not an http(s)://host:port URL", index.ErrInvalidArgument, cfg.URL)
	}
	if cfg.Collection == "" {
		cfg.Collection = DefaultCollection
	}
	if !validName(cfg.Collection) {
		return nil, fmt.Errorf("%w: Weaviate collection %q must start with a capital letter and hold only letters, digits and _", index.ErrInvalidArgument, cfg.Collection)
	}
	wcfg := wv.Config{Host: u.Host, Scheme: u.Scheme, Timeout: 30 * time.Second}
	if cfg.APIKey != "" {
		wcfg.AuthConfig = auth.ApiKey{Value: cfg.APIKey}
	}
	if cfg.GRPCAddress != "" {
		wcfg.GrpcConfig = &wvgrpc.Config{Host: cfg.GRPCAddress, Secured: u.Scheme == "https"}
	}
	client, err := wv.NewClient(wcfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to Weaviate at %s: %w", u.Host, err)
	}
	return &Store{client: client, host: u.Host, alias: cfg.Collection}, nil
}

func validName(s string) bool {
	if s == "" || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for _, r := range s {
		if !(r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

func (s *Store) Name() string { return "weaviate at " + s.host + ", collection " + s.alias }

func (s *Store) Ready(ctx context.Context) error {
	ok, err := s.client.Misc().ReadyChecker().Do(ctx)
	if err == nil && !ok {
		err = errors.New("not ready")
	}
	return err
}

func (s *Store) Close() error { return nil }

// descriptionPrefix begins a collection's description, which ends with
// its fingerprint. The layout says how objects are written: layout 2 made
// author and role filterable, and time a date, for searches' filters.
const descriptionPrefix = "Hector search index, layout 2; documents made by: "

// olderPrefix began the description of a collection of layout 1.
const olderPrefix = "Hector search index; documents made by: "

func (s *Store) Open(ctx context.Context, schema index.Schema) error {
	fingerprint := schema.Fingerprint
	class, err := s.liveClass(ctx)
	if err != nil {
		return err
	}
	if class == "" {
		// First start: make generation 1 and point the alias at it. Another
		// replica doing the same at once is fine: both end up on one class.
		class = s.alias + "_G1"
		if err := s.createClass(ctx, class, fingerprint); err != nil {
			return err
		}
		if err := s.client.Alias().AliasCreator().WithAlias(&alias.Alias{Alias: s.alias, Class: class}).Do(ctx); err != nil && !alreadyExists(err) {
			return fmt.Errorf("creating alias %s: %w", s.alias, err)
		}
		if class, err = s.liveClass(ctx); err != nil {
			return err
		}
	}
	c, err := s.client.Schema().ClassGetter().WithClassName(class).Do(ctx)
	if err != nil {
		return fmt.Errorf("reading collection %s: %w", class, err)
	}
	if strings.HasPrefix(c.Description, olderPrefix) {
		return fmt.Errorf("%w: Weaviate collection %s was made by an older Hector, whose objects cannot be filtered by author, role or time", index.ErrNeedsRebuild, s.alias)
	}
	if got := strings.TrimPrefix(c.Description, descriptionPrefix); got != fingerprint {
		return fmt.Errorf("%w: Weaviate collection %s was built by %q and this configuration makes %q", index.ErrNeedsRebuild, s.alias, got, fingerprint)
	}
	if cfg := c.InvertedIndexConfig; cfg != nil && cfg.UsingBlockMaxWAND && !s.warned.Swap(true) {
		slog.Warn(blockMaxWarning, "collection", class)
	}
	return nil
}

// blockMaxWarning: Weaviate's BlockMax WAND, the default for collections
// made since 1.30 (and which a class cannot turn off: false is the field's
// zero value, which the server takes for "the default"), loses documents
// from BM25's top results. On 1.35.2, a query holding a term common to
// many of a user's messages (a speaker's name) and a rare one returned
// only messages with the common term: keyword recall@5 on the
// conversation set was 0.17 against 0.44 in process, and equal with it off.
const blockMaxWarning = "index: this Weaviate collection uses BlockMax WAND, whose keyword search loses documents; " +
	"start Weaviate with USE_INVERTED_SEARCHABLE=false and run `hector index rebuild --all` (see docs/deploy.md)"

// liveClass is the physical collection the alias points at, "" if none.
func (s *Store) liveClass(ctx context.Context) (string, error) {
	a, err := s.client.Alias().AliasGetter().WithAliasName(s.alias).Do(ctx)
	var wErr *fault.WeaviateClientError
	if errors.As(err, &wErr) && wErr.StatusCode == 404 {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("reading alias %s: %w", s.alias, err)
	}
	return a.Class, nil
}

func alreadyExists(err error) bool {
	return err != nil && strings.Contains(err.Error(), "already exists")
}

func (s *Store) createClass(ctx context.Context, name, fingerprint string) error {
	text := []string{"text"}
	off := new(bool)
	err := s.client.Schema().ClassCreator().WithClass(&models.Class{
		Class:       name,
		Description: descriptionPrefix + fingerprint,
		Vectorizer:  "none",
		// Tenants appear on first write: a user's shard costs nothing until
		// the user has memory.
		MultiTenancyConfig: &models.MultiTenancyConfig{Enabled: true, AutoTenantCreation: true, AutoTenantActivation: true},
		// Hector removes stop words itself (when stemming); Weaviate must not
		// remove others, so that keyword search matches the in-process index.
		InvertedIndexConfig: &models.InvertedIndexConfig{Stopwords: &models.StopwordConfig{Preset: "none"}},
		VectorIndexConfig:   map[string]any{"distance": "cosine"},
		Properties: []*models.Property{
			{Name: "terms", DataType: text, Tokenization: "whitespace", IndexFilterable: off},
			{Name: "session", DataType: text, Tokenization: "field", IndexSearchable: off},
			{Name: "event", DataType: text, Tokenization: "field", IndexSearchable: off},
			{Name: "app", DataType: text, IndexFilterable: off, IndexSearchable: off},
			{Name: "user", DataType: text, IndexFilterable: off, IndexSearchable: off},
			{Name: "author", DataType: text, Tokenization: "field", IndexSearchable: off},
			{Name: "role", DataType: text, Tokenization: "field", IndexSearchable: off},
			{Name: "time", DataType: []string{"date"}},
			{Name: "text", DataType: text, IndexFilterable: off, IndexSearchable: off},
			{Name: "seq", DataType: []string{"int"}, IndexFilterable: off, IndexRangeFilters: off},
		},
	}).Do(ctx)
	if err != nil && !alreadyExists(err) {
		return fmt.Errorf("creating collection %s: %w", name, err)
	}
	return nil
}

// tenant names the (app, user)'s tenant: a hash, since tenant names allow
// only [A-Za-z0-9_-] and at most 64 characters.
func tenant(o index.Owner) string { return "t" + o.Key()[:40] }

// tenantMissing tells an error about a tenant that does not exist yet:
// a user with no memory, not a failure.
func tenantMissing(msg string) bool { return strings.Contains(msg, "tenant not found") }

func (s *Store) Write(ctx context.Context, o index.Owner, docs []index.StoredDoc) error {
	return s.write(ctx, s.alias, o, docs)
}

const batchSize = 200

func (s *Store) write(ctx context.Context, class string, o index.Owner, docs []index.StoredDoc) error {
	for len(docs) > 0 {
		n := min(len(docs), batchSize)
		objects := make([]*models.Object, n)
		for i, d := range docs[:n] {
			objects[i] = &models.Object{
				Class: class, Tenant: tenant(o), ID: strfmt.UUID(index.DocumentID(o, d.SessionID, d.EventID)), Vector: d.Vector,
				Properties: map[string]any{
					"terms": strings.Join(d.Terms, " "), "session": d.SessionID, "event": d.EventID, "app": o.App, "user": o.User,
					"author": d.Author, "role": d.Role, "time": d.Timestamp.Format(time.RFC3339Nano), "text": d.Text, "seq": d.Seq,
				},
			}
		}
		resp, err := s.client.Batch().ObjectsBatcher().WithObjects(objects...).Do(ctx)
		if err != nil {
			return err
		}
		for _, r := range resp {
			if r.Result != nil && r.Result.Errors != nil && len(r.Result.Errors.Error) > 0 {
				return fmt.Errorf("writing an object: %s", r.Result.Errors.Error[0].Message)
			}
		}
		docs = docs[n:]
	}
	return nil
}

func (s *Store) DeleteSession(ctx context.Context, o index.Owner, sessionID string) error {
	return s.deleteWhere(ctx, s.alias, o, filters.Where().WithPath([]string{"session"}).WithOperator(filters.Equal).WithValueText(sessionID))
}

// deleteWhere deletes the tenant's objects that match where, in as many
// rounds as the server's per-request maximum needs.
func (s *Store) deleteWhere(ctx context.Context, class string, o index.Owner, where *filters.WhereBuilder) error {
	for {
		resp, err := s.client.Batch().ObjectsBatchDeleter().WithClassName(class).WithTenant(tenant(o)).WithWhere(where).Do(ctx)
		if err != nil {
			if tenantMissing(err.Error()) {
				return nil
			}
			return err
		}
		if resp.Results == nil {
			return errors.New("deleting objects: Weaviate answered without results")
		}
		if resp.Results.Failed > 0 {
			return fmt.Errorf("deleting objects: %d failed", resp.Results.Failed)
		}
		if resp.Results.Matches < resp.Results.Limit || resp.Results.Successful == 0 {
			return nil
		}
	}
}

func (s *Store) Missing(ctx context.Context, o index.Owner, sessionID string, eventIDs []string) ([]string, error) {
	if len(eventIDs) == 0 {
		return nil, nil
	}
	// Filters name the physical collection: Weaviate 1.35 rejects a
	// filtered query that names an alias.
	class, err := s.liveClass(ctx)
	if err != nil {
		return nil, err
	}
	where := filters.Where().WithOperator(filters.And).WithOperands([]*filters.WhereBuilder{
		filters.Where().WithPath([]string{"session"}).WithOperator(filters.Equal).WithValueText(sessionID),
		filters.Where().WithPath([]string{"event"}).WithOperator(filters.ContainsAny).WithValueText(eventIDs...),
	})
	rows, err := s.get(ctx, s.client.GraphQL().Get().WithClassName(class).WithTenant(tenant(o)).
		WithFields(graphql.Field{Name: "event"}).WithWhere(where).WithLimit(len(eventIDs)), class)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for _, r := range rows {
		have[str(r["event"])] = true
	}
	var missing []string
	for _, id := range eventIDs {
		if !have[id] {
			missing = append(missing, id)
		}
	}
	return missing, nil
}

// get runs a Get query and returns its rows; a tenant that does not exist
// has none.
func (s *Store) get(ctx context.Context, q *graphql.GetBuilder, class string) ([]map[string]any, error) {
	resp, err := q.Do(ctx)
	if err != nil {
		return nil, err
	}
	if len(resp.Errors) > 0 {
		if tenantMissing(resp.Errors[0].Message) {
			return nil, nil
		}
		return nil, errors.New(resp.Errors[0].Message)
	}
	getPart, _ := resp.Data["Get"].(map[string]any)
	list, _ := getPart[class].([]any)
	rows := make([]map[string]any, 0, len(list))
	for _, item := range list {
		if row, ok := item.(map[string]any); ok {
			rows = append(rows, row)
		}
	}
	return rows, nil
}

var resultFields = []graphql.Field{{Name: "session"}, {Name: "event"}, {Name: "app"}, {Name: "user"}, {Name: "author"},
	{Name: "role"}, {Name: "time"}, {Name: "text"}, {Name: "seq"},
	{Name: "_additional", Fields: []graphql.Field{{Name: "score"}, {Name: "distance"}}}}

func (s *Store) Search(ctx context.Context, o index.Owner, q index.StoreQuery) ([]index.SearchResult, error) {
	gql := s.client.GraphQL()
	class := s.alias
	where := whereOf(q.Filter)
	if where != nil {
		// Filters name the physical collection (see Missing).
		var err error
		if class, err = s.liveClass(ctx); err != nil {
			return nil, err
		}
	}
	get := gql.Get().WithClassName(class).WithTenant(tenant(o)).WithFields(resultFields...).WithLimit(q.Limit)
	if where != nil {
		get = get.WithWhere(where)
	}
	byDistance := q.Vector != nil
	if byDistance {
		get = get.WithNearVector(gql.NearVectorArgBuilder().WithVector(q.Vector))
	} else {
		get = get.WithBM25(gql.Bm25ArgBuilder().WithQuery(strings.Join(q.Terms, " ")).WithProperties("terms"))
	}
	rows, err := s.get(ctx, get, class)
	if err != nil {
		return nil, err
	}
	out := make([]index.SearchResult, 0, len(rows))
	for _, r := range rows {
		if str(r["app"]) != o.App || str(r["user"]) != o.User {
			return nil, errors.New("the Weaviate server returned an object outside the requested (app, user)")
		}
		add, _ := r["_additional"].(map[string]any)
		var score float64
		if byDistance {
			d, _ := add["distance"].(float64)
			score = 1 - d
		} else {
			score, _ = strconv.ParseFloat(str(add["score"]), 64)
		}
		ts, _ := time.Parse(time.RFC3339Nano, str(r["time"]))
		seq, _ := r["seq"].(float64)
		d := index.Document{SessionID: str(r["session"]), EventID: str(r["event"]), Seq: int64(seq), Author: str(r["author"]),
			Role: str(r["role"]), Timestamp: ts, Text: str(r["text"])}
		out = append(out, d.Result(score))
	}
	return out, nil
}

// whereOf is the filter that keeps what f keeps, nil for none.
func whereOf(f index.Filter) *filters.WhereBuilder {
	var and []*filters.WhereBuilder
	for _, c := range []struct{ path, value string }{{"session", f.SessionID}, {"author", f.Author}, {"role", f.Role}} {
		if c.value != "" {
			and = append(and, filters.Where().WithPath([]string{c.path}).WithOperator(filters.Equal).WithValueText(c.value))
		}
	}
	from, to := f.Window()
	if !from.IsZero() {
		and = append(and, filters.Where().WithPath([]string{"time"}).WithOperator(filters.GreaterThanEqual).WithValueDate(from))
	}
	if !to.IsZero() {
		and = append(and, filters.Where().WithPath([]string{"time"}).WithOperator(filters.LessThanEqual).WithValueDate(to))
	}
	switch len(and) {
	case 0:
		return nil
	case 1:
		return and[0]
	}
	return filters.Where().WithOperator(filters.And).WithOperands(and)
}

func str(v any) string { s, _ := v.(string); return s }

// DropOwner deletes the owner's tenant, whose name is a hash of them:
// erasing a person leaves no empty shard behind that names them.
// Deleting a tenant that does not exist succeeds.
func (s *Store) DropOwner(ctx context.Context, o index.Owner) error {
	class, err := s.liveClass(ctx)
	if err != nil || class == "" {
		return err
	}
	return s.client.Schema().TenantsDeleter().WithClassName(class).WithTenants(tenant(o)).Do(ctx)
}

func (s *Store) Prune(ctx context.Context, o index.Owner, keep func(sessionID, eventID string) bool) error {
	class, err := s.liveClass(ctx)
	if err != nil {
		return err
	}
	var drop []string
	for after := ""; ; {
		q := s.client.GraphQL().Get().WithClassName(class).WithTenant(tenant(o)).WithLimit(500).
			WithFields(graphql.Field{Name: "session"}, graphql.Field{Name: "event"}, graphql.Field{Name: "_additional", Fields: []graphql.Field{{Name: "id"}}})
		if after != "" {
			q = q.WithAfter(after)
		}
		rows, err := s.get(ctx, q, class)
		if err != nil {
			return err
		}
		if len(rows) == 0 {
			break
		}
		for _, r := range rows {
			add, _ := r["_additional"].(map[string]any)
			after = str(add["id"])
			if !keep(str(r["session"]), str(r["event"])) {
				drop = append(drop, after)
			}
		}
	}
	for len(drop) > 0 {
		n := min(len(drop), 500)
		if err := s.deleteWhere(ctx, class, o, filters.Where().WithPath([]string{"id"}).WithOperator(filters.ContainsAny).WithValueText(drop[:n]...)); err != nil {
			return err
		}
		drop = drop[n:]
	}
	return nil
}

// Begin makes the next generation's collection.
func (s *Store) Begin(ctx context.Context, schema index.Schema) (index.StoreBuild, error) {
	live, err := s.liveClass(ctx)
	if err != nil {
		return nil, err
	}
	gen := 1
	if i := strings.LastIndex(live, "_G"); i >= 0 {
		if n, err := strconv.Atoi(live[i+2:]); err == nil {
			gen = n + 1
		}
	}
	next := s.alias + "_G" + strconv.Itoa(gen)
	// A rebuild that died before committing may have left this one behind.
	if err := s.client.Schema().ClassDeleter().WithClassName(next).Do(ctx); err != nil && !notFound(err) {
		return nil, fmt.Errorf("dropping the unfinished collection %s: %w", next, err)
	}
	if err := s.createClass(ctx, next, schema.Fingerprint); err != nil {
		return nil, err
	}
	return &build{s: s, class: next, old: live}, nil
}

func notFound(err error) bool {
	var wErr *fault.WeaviateClientError
	return errors.As(err, &wErr) && wErr.StatusCode == 404
}

type build struct {
	s          *Store
	class, old string
}

func (b *build) Write(ctx context.Context, o index.Owner, docs []index.StoredDoc) error {
	return b.s.write(ctx, b.class, o, docs)
}

func (b *build) DeleteSession(ctx context.Context, o index.Owner, sessionID string) error {
	return b.s.deleteWhere(ctx, b.class, o, filters.Where().WithPath([]string{"session"}).WithOperator(filters.Equal).WithValueText(sessionID))
}

func (b *build) Commit(ctx context.Context) error {
	a := &alias.Alias{Alias: b.s.alias, Class: b.class}
	var err error
	if b.old == "" {
		err = b.s.client.Alias().AliasCreator().WithAlias(a).Do(ctx)
	} else {
		err = b.s.client.Alias().AliasUpdater().WithAlias(a).Do(ctx)
	}
	if err != nil {
		return fmt.Errorf("switching alias %s to %s: %w", b.s.alias, b.class, err)
	}
	if b.old != "" {
		// Best effort: a leftover old generation costs disk, never results.
		_ = b.s.client.Schema().ClassDeleter().WithClassName(b.old).Do(ctx)
	}
	return nil
}

func (b *build) Abort(ctx context.Context) error {
	if err := b.s.client.Schema().ClassDeleter().WithClassName(b.class).Do(ctx); err != nil && !notFound(err) {
		return err
	}
	return nil
}

// Drop deletes the collection: its alias and every generation.
func (s *Store) Drop(ctx context.Context) error {
	live, err := s.liveClass(ctx)
	if err != nil {
		return err
	}
	if live == "" {
		return nil
	}
	if err := s.client.Alias().AliasDeleter().WithAliasName(s.alias).Do(ctx); err != nil && !notFound(err) {
		return err
	}
	return s.client.Schema().ClassDeleter().WithClassName(live).Do(ctx)
}
