// Package pgsearch keeps a keyword index in PostgreSQL, in the sessions'
// own database, for deployments that want no second engine: one table of
// documents, each with a tsvector of Hector's own terms under a GIN index.
//
// Ranking is BM25 computed in SQL, per (app, user) as in process: the
// document frequencies and average length are that user's, so results rank
// exactly as the in-process keyword index ranks them. Every statement names
// the app and user in its WHERE clause; the table's primary key begins
// with them.
//
// The tsvector holds Hector's terms rather than PostgreSQL's parse of the
// text, so that every store matches the same words (any script, CJK pairs,
// identifiers, stemming). PostgreSQL keeps at most 256 positions of a term
// per document, which caps a term's frequency where BM25 has long since
// saturated.
//
// Rebuilds: a full rebuild fills <table>_next beside the live table and
// renames it into place in one transaction, so searches never see a
// half-built index. The table's comment records the fingerprint of how its
// documents were made.
package pgsearch

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/hectormem/hector/pkg/index"
)

// DefaultTable is the table name when the config gives none.
const DefaultTable = "hector_search"

// BM25's usual parameters, as in process.
const (
	bm25K1 = 1.2
	bm25B  = 0.75
)

// maxTermBytes is PostgreSQL's limit on a tsvector lexeme (2047 bytes);
// a longer term is left out of the document.
const maxTermBytes = 2047

// Store is an index.Store in a PostgreSQL table.
type Store struct {
	db    *sql.DB
	table string
}

var _ index.Store = (*Store)(nil)

var validTable = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,49}$`)

// CheckTable says what is wrong with a table name, if anything: the name
// goes into statements as it is, with suffixes for rebuilds.
func CheckTable(table string) error {
	if !validTable.MatchString(table) {
		return fmt.Errorf("%w: PostgreSQL table name %q must be lower-case letters, digits and _, at most 50, not starting with a digit", index.ErrInvalidArgument, table)
	}
	return nil
}

// New returns a store on table (DefaultTable when empty) in db, which must
// be PostgreSQL; the table is made on Open.
func New(db *sql.DB, table string) (*Store, error) {
	if table == "" {
		table = DefaultTable
	}
	if err := CheckTable(table); err != nil {
		return nil, err
	}
	return &Store{db: db, table: table}, nil
}

func (s *Store) Name() string { return "postgres table " + s.table }

func (s *Store) Ready(ctx context.Context) error { return s.db.PingContext(ctx) }

func (s *Store) Close() error { return nil } // the database is the caller's

func (s *Store) Open(ctx context.Context, schema index.Schema) error {
	if schema.Dimensions > 0 {
		return fmt.Errorf("%w: the postgres store holds keyword indexes only; use weaviate or qdrant for vectors", index.ErrInvalidArgument)
	}
	if err := s.create(ctx, s.table, schema.Fingerprint, false); err != nil {
		return err
	}
	var got sql.NullString
	if err := s.db.QueryRowContext(ctx, `SELECT obj_description(to_regclass($1), 'pg_class')`, s.table).Scan(&got); err != nil {
		return fmt.Errorf("reading table %s: %w", s.table, err)
	}
	if got.String != schema.Fingerprint {
		return fmt.Errorf("%w: PostgreSQL table %s was built by %q and this configuration makes %q", index.ErrNeedsRebuild, s.table, got.String, schema.Fingerprint)
	}
	return nil
}

// create makes table (replacing it when replace is set) with its indexes
// and fingerprint, in one transaction under a lock, so that replicas
// starting together do not collide.
func (s *Store) create(ctx context.Context, table, fingerprint string, replace bool) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	stmts := []string{`SELECT pg_advisory_xact_lock(hashtextextended(current_schema() || '/hector-search/' || $1, 0))`}
	if replace {
		stmts = append(stmts, `DROP TABLE IF EXISTS `+table)
	}
	stmts = append(stmts,
		`CREATE TABLE IF NOT EXISTS `+table+` (
			app_name   text   NOT NULL,
			user_id    text   NOT NULL,
			session_id text   NOT NULL,
			event_id   text   NOT NULL,
			seq        bigint NOT NULL,
			author     text   NOT NULL,
			role       text   NOT NULL,
			time_ns    bigint NOT NULL,
			content    text   NOT NULL,
			length     integer NOT NULL,
			terms      tsvector NOT NULL,
			CONSTRAINT `+table+`_pkey PRIMARY KEY (app_name, user_id, session_id, event_id)
		)`,
		`CREATE INDEX IF NOT EXISTS `+table+`_terms ON `+table+` USING gin (terms)`,
		// BM25's statistics of one owner, read from the index alone.
		`CREATE INDEX IF NOT EXISTS `+table+`_lengths ON `+table+` (app_name, user_id) INCLUDE (length)`,
	)
	for i, stmt := range stmts {
		var args []any
		if i == 0 {
			args = []any{s.table}
		}
		if _, err := tx.ExecContext(ctx, stmt, args...); err != nil {
			return fmt.Errorf("creating table %s: %w", table, err)
		}
	}
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT obj_description(to_regclass($1), 'pg_class') IS NOT NULL`, table).Scan(&exists); err != nil {
		return err
	}
	if !exists { // a new table: say how its documents are made
		if _, err := tx.ExecContext(ctx, `COMMENT ON TABLE `+table+` IS `+quoteLiteral(fingerprint)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// quoteLiteral quotes s as an SQL string literal (COMMENT takes no parameters).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// quoteLexeme quotes a term for a tsvector or tsquery literal: inside
// quotes, quotes and backslashes are doubled.
func quoteLexeme(t string) string {
	return "'" + strings.ReplaceAll(strings.ReplaceAll(t, `\`, `\\`), "'", "''") + "'"
}

// tsvector writes a document's terms with their positions, counted from 1.
func tsvector(terms []string) string {
	positions := map[string][]string{}
	var order []string
	for i, t := range terms {
		if len(t) > maxTermBytes {
			continue
		}
		if positions[t] == nil {
			order = append(order, t)
		}
		positions[t] = append(positions[t], fmt.Sprint(min(i+1, 16383)))
	}
	var b strings.Builder
	for _, t := range order {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(quoteLexeme(t))
		b.WriteByte(':')
		b.WriteString(strings.Join(positions[t], ","))
	}
	return b.String()
}

func (s *Store) Write(ctx context.Context, o index.Owner, docs []index.StoredDoc) error {
	return s.write(ctx, s.table, o, docs)
}

const batchSize = 500

func (s *Store) write(ctx context.Context, table string, o index.Owner, docs []index.StoredDoc) error {
	for len(docs) > 0 {
		n := min(len(docs), batchSize)
		cols := struct {
			session, event, author, role, content, terms []string
			seq, timeNs                                  []int64
			length                                       []int32
		}{}
		for _, d := range docs[:n] {
			cols.session = append(cols.session, d.SessionID)
			cols.event = append(cols.event, d.EventID)
			cols.author = append(cols.author, d.Author)
			cols.role = append(cols.role, d.Role)
			cols.content = append(cols.content, d.Text)
			cols.terms = append(cols.terms, tsvector(d.Terms))
			cols.seq = append(cols.seq, d.Seq)
			cols.timeNs = append(cols.timeNs, d.Timestamp.UnixNano())
			cols.length = append(cols.length, int32(len(d.Terms)))
		}
		_, err := s.db.ExecContext(ctx, `INSERT INTO `+table+`
			SELECT $1::text, $2::text, session_id, event_id, seq, author, role, time_ns, content, length, terms::tsvector
			FROM unnest($3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::bigint[], $9::text[], $10::integer[], $11::text[])
				AS u(session_id, event_id, seq, author, role, time_ns, content, length, terms)
			ON CONFLICT (app_name, user_id, session_id, event_id) DO UPDATE SET
				seq = excluded.seq, author = excluded.author, role = excluded.role, time_ns = excluded.time_ns,
				content = excluded.content, length = excluded.length, terms = excluded.terms`,
			o.App, o.User, cols.session, cols.event, cols.seq, cols.author, cols.role, cols.timeNs, cols.content, cols.length, cols.terms)
		if err != nil {
			return err
		}
		docs = docs[n:]
	}
	return nil
}

func (s *Store) DeleteSession(ctx context.Context, o index.Owner, sessionID string) error {
	return s.deleteSession(ctx, s.table, o, sessionID)
}

func (s *Store) deleteSession(ctx context.Context, table string, o index.Owner, sessionID string) error {
	_, err := s.db.ExecContext(ctx, `DELETE FROM `+table+` WHERE app_name = $1 AND user_id = $2 AND session_id = $3`, o.App, o.User, sessionID)
	return err
}

func (s *Store) Missing(ctx context.Context, o index.Owner, sessionID string, eventIDs []string) ([]string, error) {
	if len(eventIDs) == 0 {
		return nil, nil
	}
	rows, err := s.db.QueryContext(ctx, `SELECT event_id FROM `+s.table+` WHERE app_name = $1 AND user_id = $2 AND session_id = $3 AND event_id = ANY($4)`,
		o.App, o.User, sessionID, eventIDs)
	if err != nil {
		return nil, err
	}
	have := map[string]bool{}
	for id, err := range scan[string](rows) {
		if err != nil {
			return nil, err
		}
		have[id] = true
	}
	var missing []string
	for _, id := range eventIDs {
		if !have[id] {
			missing = append(missing, id)
		}
	}
	return missing, nil
}

// scan yields each row's single column.
func scan[T any](rows *sql.Rows) func(yield func(T, error) bool) {
	return func(yield func(T, error) bool) {
		defer rows.Close()
		for rows.Next() {
			var v T
			err := rows.Scan(&v)
			if !yield(v, err) || err != nil {
				return
			}
		}
		if err := rows.Err(); err != nil {
			var zero T
			yield(zero, err)
		}
	}
}

// searchSQL ranks the owner's documents that hold any query term and that
// the filter (%[4]s, on hits h) keeps by BM25, with that owner's document
// frequencies and average length over all its documents, keeping the best
// $5 before reading their content. Ties go to the newer event, as in
// process.
const searchSQL = `
WITH matched AS (
	SELECT session_id, event_id, author, role, time_ns, length, terms FROM %[1]s
	WHERE app_name = $1 AND user_id = $2 AND terms @@ $3::text::tsquery
), hits AS (
	SELECT m.session_id, m.event_id, m.author, m.role, m.time_ns, m.length, u.lexeme, cardinality(u.positions) AS tf
	FROM matched m, unnest(m.terms) u WHERE u.lexeme = ANY($4::text[])
), df AS (
	SELECT lexeme, count(*)::float8 AS df FROM hits GROUP BY lexeme
), stats AS (
	SELECT count(*)::float8 AS n, avg(length)::float8 AS avg_length FROM %[1]s WHERE app_name = $1 AND user_id = $2
), best AS (
	SELECT h.session_id, h.event_id, h.time_ns,
		sum(ln(1 + (s.n - df.df + 0.5) / (df.df + 0.5)) * h.tf * (%[2]g + 1) / (h.tf + %[2]g * (1 - %[3]g + %[3]g * h.length / s.avg_length))) AS score
	FROM hits h JOIN df USING (lexeme) CROSS JOIN stats s
	WHERE %[4]s
	GROUP BY h.session_id, h.event_id, h.time_ns
	ORDER BY score DESC, h.time_ns DESC, h.session_id, h.event_id
	LIMIT $5
)
SELECT d.session_id, d.event_id, d.seq, d.author, d.role, d.time_ns, d.content, b.score
FROM best b JOIN %[1]s d ON d.app_name = $1 AND d.user_id = $2 AND d.session_id = b.session_id AND d.event_id = b.event_id
ORDER BY b.score DESC, b.time_ns DESC, b.session_id, b.event_id`

// filterSQL is the condition on hits h that keeps what f keeps, its
// values appended to args as parameters. Times are exact here: the table
// keeps nanoseconds.
func filterSQL(f index.Filter, args []any) (string, []any) {
	conds := []string{"true"}
	add := func(cond string, v any) {
		args = append(args, v)
		conds = append(conds, fmt.Sprintf(cond, len(args)))
	}
	if f.SessionID != "" {
		add("h.session_id = $%d", f.SessionID)
	}
	if f.Author != "" {
		add("h.author = $%d", f.Author)
	}
	if f.Role != "" {
		add("h.role = $%d", f.Role)
	}
	if !f.After.IsZero() {
		add("h.time_ns > $%d", f.After.UnixNano())
	}
	if !f.Before.IsZero() {
		add("h.time_ns < $%d", f.Before.UnixNano())
	}
	return strings.Join(conds, " AND "), args
}

func (s *Store) Search(ctx context.Context, o index.Owner, q index.StoreQuery) ([]index.SearchResult, error) {
	if q.Vector != nil {
		return nil, fmt.Errorf("%w: the postgres store holds keyword indexes only", index.ErrInvalidArgument)
	}
	var terms []string
	for _, t := range q.Terms {
		if len(t) <= maxTermBytes && !slices.Contains(terms, t) {
			terms = append(terms, t)
		}
	}
	if len(terms) == 0 {
		return nil, nil
	}
	quoted := make([]string, len(terms))
	for i, t := range terms {
		quoted[i] = quoteLexeme(t)
	}
	filter, args := filterSQL(q.Filter, []any{o.App, o.User, strings.Join(quoted, " | "), terms, q.Limit})
	rows, err := s.db.QueryContext(ctx, fmt.Sprintf(searchSQL, s.table, bm25K1, bm25B, filter), args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []index.SearchResult
	for rows.Next() {
		var d index.Document
		var timeNs int64
		var score float64
		if err := rows.Scan(&d.SessionID, &d.EventID, &d.Seq, &d.Author, &d.Role, &timeNs, &d.Text, &score); err != nil {
			return nil, err
		}
		d.Timestamp = time.Unix(0, timeNs)
		out = append(out, d.Result(score))
	}
	return out, rows.Err()
}

func (s *Store) Prune(ctx context.Context, o index.Owner, keep func(sessionID, eventID string) bool) error {
	rows, err := s.db.QueryContext(ctx, `SELECT session_id, event_id FROM `+s.table+` WHERE app_name = $1 AND user_id = $2`, o.App, o.User)
	if err != nil {
		return err
	}
	var sessions, events []string
	for rows.Next() {
		var session, event string
		if err := rows.Scan(&session, &event); err != nil {
			rows.Close()
			return err
		}
		if !keep(session, event) {
			sessions, events = append(sessions, session), append(events, event)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	_, err = s.db.ExecContext(ctx, `DELETE FROM `+s.table+` d USING unnest($3::text[], $4::text[]) AS u(session_id, event_id)
		WHERE d.app_name = $1 AND d.user_id = $2 AND d.session_id = u.session_id AND d.event_id = u.event_id`, o.App, o.User, sessions, events)
	return err
}

// Begin makes the table a full rebuild fills.
func (s *Store) Begin(ctx context.Context, schema index.Schema) (index.StoreBuild, error) {
	if schema.Dimensions > 0 {
		return nil, fmt.Errorf("%w: the postgres store holds keyword indexes only", index.ErrInvalidArgument)
	}
	next := s.table + "_next"
	// A rebuild that died before committing may have left one behind.
	if err := s.create(ctx, next, schema.Fingerprint, true); err != nil {
		return nil, err
	}
	return &build{s: s, table: next}, nil
}

type build struct {
	s     *Store
	table string
}

func (b *build) Write(ctx context.Context, o index.Owner, docs []index.StoredDoc) error {
	return b.s.write(ctx, b.table, o, docs)
}

func (b *build) DeleteSession(ctx context.Context, o index.Owner, sessionID string) error {
	return b.s.deleteSession(ctx, b.table, o, sessionID)
}

// Commit renames the new table into place in one transaction.
func (b *build) Commit(ctx context.Context) error {
	live := b.s.table
	tx, err := b.s.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, stmt := range []string{
		// A table filled at once has no statistics yet: without them the
		// planner may scan every row of a user instead of the GIN index.
		`ANALYZE ` + b.table,
		`DROP TABLE IF EXISTS ` + live,
		`ALTER TABLE ` + b.table + ` RENAME TO ` + live,
		`ALTER INDEX ` + b.table + `_pkey RENAME TO ` + live + `_pkey`,
		`ALTER INDEX ` + b.table + `_terms RENAME TO ` + live + `_terms`,
		`ALTER INDEX ` + b.table + `_lengths RENAME TO ` + live + `_lengths`,
	} {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("switching to the rebuilt table: %w", err)
		}
	}
	return tx.Commit()
}

func (b *build) Abort(ctx context.Context) error {
	_, err := b.s.db.ExecContext(ctx, `DROP TABLE IF EXISTS `+b.table)
	return err
}

// Drop deletes the table and any unfinished rebuild's.
func (s *Store) Drop(ctx context.Context) error {
	_, err := s.db.ExecContext(ctx, `DROP TABLE IF EXISTS `+s.table+`, `+s.table+`_next`)
	return err
}
