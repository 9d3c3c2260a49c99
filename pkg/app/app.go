package app

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"gorm.io/gorm"

	"github.com/hectormem/hector/pkg/agent"
	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/embed"
	"github.com/hectormem/hector/pkg/embed/use"
	"github.com/hectormem/hector/pkg/erase"
	"github.com/hectormem/hector/pkg/extract"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/pgsearch"
	"github.com/hectormem/hector/pkg/index/pinecone"
	"github.com/hectormem/hector/pkg/index/position"
	"github.com/hectormem/hector/pkg/index/qdrant"
	"github.com/hectormem/hector/pkg/index/weaviate"
	"github.com/hectormem/hector/pkg/llm"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/sqldb"
	"github.com/hectormem/hector/pkg/userarchive"
	"github.com/hectormem/hector/pkg/userdata"
)

// Services are the stores a configuration describes, opened and wired:
// deleting a session deletes its artifacts and index entries.
type Services struct {
	Sessions  session.Service
	Artifacts artifacts.Service
	Index     index.Live
	// Extractor learns facts from sessions; nil when server.extraction is off.
	Extractor *extract.Extractor
	// Receipts keeps erasure receipts, beside the sessions.
	Receipts erase.Receipts
	// Erasures runs erasures, and holds writes to a user being erased.
	Erasures *erase.Runner
	// Imports records the imports under way, beside the sessions.
	Imports userarchive.Imports
	undoing *userarchive.Undoer // the imports a stop cut short, see Recover
	process string              // this process in the records of its imports
	logger  *slog.Logger
	// stopWatching ends the Erasures' watch on the receipts, which
	// watching waits for, before the databases close.
	stopWatching context.CancelFunc
	watching     sync.WaitGroup
	// Caches are what erasure clears beside the stores: the sessions'
	// cache, and Agents adds the agents' tool cache.
	Caches []userdata.Cache
	Facts  *facts.Service
	sql    *session.SQLService // closed before the databases
	// sharedEmbedder is the index's embedder, shared with the facts (see embedder).
	sharedEmbedder embed.Embedder
	dbs            map[string]*gorm.DB
	disks          map[string]string // what is written where on this machine, for Unready
	// The hosted agents, made by the first call of Agents, and their
	// connections to MCP servers.
	agentsOnce     sync.Once
	agents         map[string]*agent.Runner
	agentsErr      error
	mcpConnections []func() error
}

// Open opens the databases and stores cfg describes.
func Open(ctx context.Context, cfg *config.Config, logger *slog.Logger, opts ...OpenOption) (*Services, error) {
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	s := &Services{dbs: map[string]*gorm.DB{}, disks: disks(cfg)}
	if err := s.open(ctx, cfg, logger, o); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// OpenOption changes what Open does.
type OpenOption func(*openOptions)

type openOptions struct{ noCatchUp bool }

// WithoutCatchUp opens the index without replaying what it missed: for a
// command about to rebuild it anyway.
func WithoutCatchUp() OpenOption { return func(o *openOptions) { o.noCatchUp = true } }

func (s *Services) db(cfg *config.Config, name string) (*gorm.DB, error) {
	if db := s.dbs[name]; db != nil {
		return db, nil
	}
	d := cfg.Databases[name]
	db, err := sqldb.Open(d.Driver, d.DSN)
	if err == nil && d.MaxConnections > 0 {
		err = sqldb.SetMaxConnections(db, d.MaxConnections)
	}
	if err != nil {
		return nil, fmt.Errorf("databases.%s: %w", name, err)
	}
	s.dbs[name] = db
	return db, nil
}

// sqlDB is the database/sql handle of a named database.
func (s *Services) sqlDB(cfg *config.Config, name string) (*sql.DB, error) {
	db, err := s.db(cfg, name)
	if err != nil {
		return nil, err
	}
	return db.DB()
}

func (s *Services) open(ctx context.Context, cfg *config.Config, logger *slog.Logger, o openOptions) error {
	srv := cfg.Server
	s.logger = logger
	host, _ := os.Hostname()
	dataDir, _ := filepath.Abs(srv.DataDir)
	// A run of its own: the records of a restart's imports must not be
	// taken for those the last run left (userarchive.UndoUnfinished).
	s.process = userarchive.RunOf(host+":"+dataDir, strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.MkdirAll(srv.DataDir, 0o750); err != nil {
		return fmt.Errorf("server.data_dir: %w", err)
	}
	switch srv.Sessions.Backend {
	case "inmemory":
		s.Sessions = session.NewInMemoryService()
		s.Receipts = erase.NewInMemoryReceipts()
		s.Imports = userarchive.NewInMemoryImports()
	default:
		db, err := s.db(cfg, srv.Sessions.Database)
		if err != nil {
			return err
		}
		if s.sql, err = session.NewSQLService(db); err != nil {
			return err
		}
		s.Sessions = s.sql
		if s.Receipts, err = erase.NewSQLReceipts(db); err != nil {
			return fmt.Errorf("erasure receipts: %w", err)
		}
		if s.Imports, err = userarchive.NewSQLImports(db); err != nil {
			return fmt.Errorf("import records: %w", err)
		}
	}
	s.Erasures = erase.NewRunner(s.Receipts, s.erase, logger)
	watch, stop := context.WithCancel(context.Background())
	s.stopWatching = stop
	s.watching.Go(func() { s.Erasures.Watch(watch) })
	if srv.Sessions.Cache > 0 {
		cached := session.NewCached(s.Sessions, srv.Sessions.Cache)
		s.Sessions, s.Caches = cached, append(s.Caches, cached)
	}

	maxSize := artifacts.WithMaxSize(int64(srv.Artifacts.MaxSizeMB) << 20)
	var err error
	switch srv.Artifacts.Backend {
	case "inmemory":
		s.Artifacts = artifacts.NewInMemoryService(maxSize)
	case "sql":
		db, err := s.db(cfg, srv.Artifacts.Database)
		if err != nil {
			return err
		}
		if s.Artifacts, err = artifacts.NewSQL(db, maxSize); err != nil {
			return err
		}
	default:
		if s.Artifacts, err = artifacts.NewFilesystem(srv.Artifacts.Dir, maxSize); err != nil {
			return err
		}
	}
	s.Sessions.OnDelete(s.Artifacts.DeleteSession)

	if err := sharedFactsKey(cfg); err != nil {
		return err
	}
	key, err := facts.LoadKey(srv.DataDir, logger)
	if err != nil {
		return err
	}
	policy := facts.DefaultPolicy()
	if srv.Facts.MaxScopeChars > 0 {
		policy.MaxScopeChars = srv.Facts.MaxScopeChars
	}
	if srv.Facts.ReservedCategories != nil {
		policy.ReservedCategories = srv.Facts.ReservedCategories
	}
	factsOpts := []facts.Option{facts.WithPolicy(policy)}
	// Facts repeated in other words are recognised, and facts found, by
	// meaning with the built-in sentence encoder, whatever the index uses:
	// the facts' cosine thresholds are USE-lite's. The index shares it when
	// it embeds with it too.
	factsEmbedder, err := s.factsEmbedder(cfg)
	if err != nil {
		return err
	}
	factsOpts = append(factsOpts, facts.WithEmbedder(factsEmbedder))
	if srv.Facts.Backend == "sql" {
		db, err := s.db(cfg, srv.Facts.Database)
		if err != nil {
			return err
		}
		s.Facts, err = facts.NewSQL(ctx, db, key, factsOpts...)
		if err != nil {
			return err
		}
	} else if s.Facts, err = facts.NewInMemoryService(key, factsOpts...); err != nil {
		return err
	}
	if x := srv.Extraction; x.LLM != "" {
		l := cfg.LLMs[x.LLM]
		model, err := llm.New(llm.Config{BaseURL: l.BaseURL, Model: l.Model, APIKey: os.Getenv(l.APIKeyEnv)})
		if err != nil {
			return fmt.Errorf("server.extraction.llm: %w", err)
		}
		budget := extract.Budget{PerHour: cmp.Or(x.TokensPerHour, config.DefaultExtractionTokensPerHour), PerDay: cmp.Or(x.TokensPerDay, config.DefaultExtractionTokensPerDay)}
		s.Extractor, err = extract.New(extract.Config{Model: model, Facts: s.Facts, Sessions: s.Sessions, Budget: budget, Concurrency: x.Concurrency,
			EveryTurns: x.EveryTurns, Logger: logger})
		if err != nil {
			return err
		}
		s.Extractor.Start()
	}
	// A session's facts go with it.
	s.Sessions.OnDelete(func(ctx context.Context, app, user, id string) error {
		_, err := s.Facts.Forget(ctx, facts.SessionScope(app, user, id), "all")
		return err
	})

	if s.Index, err = s.openIndex(ctx, cfg, logger, o); err != nil || o.noCatchUp {
		return err
	}
	// A deletion reaches the index through the change feed: catching up
	// now applies it before Delete returns. When the store does not answer,
	// the follower applies it later; the session is deleted either way.
	s.Sessions.OnDelete(func(ctx context.Context, app, user, id string) error {
		if err := s.Index.CatchUp(ctx, s.Sessions); err != nil {
			logger.Warn("index: a deleted session stays searchable until the index catches up", "session", id, "error", err)
		}
		return nil
	})
	return nil
}

// sharedFactsKey refuses to make a facts key of this process's own for
// facts in a server database: replicas share those facts, and a key file
// one replica wrote into its data directory would leave the others unable
// to read them (the data directory holds nothing replicas need to share).
func sharedFactsKey(cfg *config.Config) error {
	srv := cfg.Server
	if srv.Facts.Backend != "sql" || cfg.Databases[srv.Facts.Database].Driver == "sqlite" || os.Getenv(facts.KeyEnv) != "" {
		return nil
	}
	if _, err := os.Stat(facts.KeyPath(srv.DataDir)); err == nil {
		return nil // made before this check: used as it is
	}
	return fmt.Errorf("server.facts: facts in the %s database %q are shared by every replica, so their key must be too: "+
		"set $%s to the same 64 hex characters on each (make one with: openssl rand -hex 32)",
		cfg.Databases[srv.Facts.Database].Driver, srv.Facts.Database, facts.KeyEnv)
}

// embedder is the index's embedder, made once and shared with the facts.
// It remembers the vectors of the texts it embedded last: a search embeds
// its query for the index and again for the user's facts, the second time
// from memory.
func (s *Services) embedder(cfg *config.Config) (embed.Embedder, error) {
	if s.sharedEmbedder == nil {
		name := cfg.Server.Index.Embedder
		e, err := BuildEmbedder(cfg.Embedders[name])
		if err != nil {
			return nil, fmt.Errorf("embedders.%s: %w", name, err)
		}
		s.sharedEmbedder = embed.Memo(e, recentTexts)
	}
	return s.sharedEmbedder, nil
}

// factsEmbedder is USE-lite, the index's own when the index uses it.
func (s *Services) factsEmbedder(cfg *config.Config) (embed.Embedder, error) {
	if ix := cfg.Server.Index; ix.Type != index.KindKeyword && cfg.Embedders[ix.Embedder].Type == "builtin" && cfg.Embedders[ix.Embedder].Model == "use-lite" {
		return s.embedder(cfg)
	}
	e, err := use.New()
	if err != nil {
		return nil, err
	}
	return embed.Memo(e, recentTexts), nil
}

// recentTexts is how many texts' vectors the shared embedder remembers.
const recentTexts = 256

func (s *Services) openIndex(ctx context.Context, cfg *config.Config, logger *slog.Logger, o openOptions) (index.Live, error) {
	srv := cfg.Server
	var e embed.Embedder
	if srv.Index.Type != index.KindKeyword {
		var err error
		if e, err = s.embedder(cfg); err != nil {
			return nil, err
		}
	}
	opts := []index.Option{index.WithLogger(logger), index.WithStemming(srv.Index.Stems())}
	if srv.Index.Vectors == "background" {
		opts = append(opts, index.WithBackgroundVectors(srv.Index.MaxVectorLag))
	}
	if srv.Index.Store == "chromem" {
		opts = append(opts, index.WithChromem())
	}
	if srv.Index.External() {
		opts = append(opts, index.WithSessions(s.Sessions))
		return s.openExternal(ctx, cfg, e, opts)
	}
	if !o.noCatchUp { // following the sessions: catch up now, clear deleted sessions from now on
		opts = append(opts, index.WithSessions(s.Sessions))
	}
	if *srv.Index.Persist {
		path := cfg.IndexFile()
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return nil, fmt.Errorf("server.data_dir: %w", err)
		}
		for _, former := range cfg.IndexFormerFiles() {
			if err := removeFormerIndex(former, logger); err != nil {
				return nil, err
			}
		}
		if srv.Index.Store == "chromem" {
			opts = append(opts, index.WithSnapshot(path))
		} else {
			opts = append(opts, index.WithFile(path))
		}
	}
	var idx *index.Index
	var err error
	switch srv.Index.Type {
	case index.KindKeyword:
		idx, err = index.NewKeyword(opts...)
	case index.KindVector:
		idx, err = index.NewVector(e, opts...)
	default:
		idx, err = index.NewHybrid(e, opts...)
	}
	if err != nil { // not a nil *Index in a non-nil interface
		return nil, err
	}
	return idx, idx.Start(ctx)
}

// removeFormerIndex removes the index a Hector configured otherwise (of
// another type, or an older Hector, whose index was a snapshot) kept at
// path: nothing keeps it up to date any more, not even an erasure, and the
// index is rebuilt from the sessions without it.
func removeFormerIndex(path string, logger *slog.Logger) error {
	removed, err := index.RemoveFile(path)
	if err != nil {
		return fmt.Errorf("index: removing the former index: %w", err)
	}
	if removed {
		logger.Info("index: removed the index kept in another type or form; the index is built from the sessions", "path", path)
	}
	return nil
}

// openExternal opens an index held in an external engine. Its place in the
// change feed is kept in the sessions' database, so that any replica can
// follow the feed; with sessions in memory, in the process.
func (s *Services) openExternal(ctx context.Context, cfg *config.Config, e embed.Embedder, opts []index.Option) (index.Live, error) {
	store, err := s.openStore(cfg)
	if err != nil {
		return nil, err
	}
	pos := index.NewInMemoryPosition()
	if cfg.Server.Sessions.Backend == "sql" {
		db, err := s.db(cfg, cfg.Server.Sessions.Database)
		if err != nil {
			return nil, err
		}
		feed := cfg.Server.Index.Feed()
		if pos, err = position.NewSQL(ctx, db, feed); err != nil {
			return nil, err
		}
		if cfg.Server.Index.Vectors == "background" {
			vectors, err := position.NewSQL(ctx, db, feed+"#vectors")
			if err != nil {
				return nil, err
			}
			opts = append(opts, index.WithVectorPosition(vectors))
		}
	}
	idx, err := index.New(cfg.Server.Index.Type, store, e, pos, opts...)
	if err != nil {
		return nil, err
	}
	return idx, idx.Start(ctx)
}

// openStore opens the external store server.index.store names (config
// knows its settings, defaults and checks).
func (s *Services) openStore(cfg *config.Config) (index.Store, error) {
	store, err := s.externalStore(cfg)
	if err != nil {
		return nil, fmt.Errorf("server.index.%s: %w", cfg.Server.Index.Store, err)
	}
	return store, nil
}

func (s *Services) externalStore(cfg *config.Config) (index.Store, error) {
	switch i := cfg.Server.Index; i.Store {
	case "weaviate":
		return weaviate.New(weaviate.Config{URL: i.Weaviate.URL, GRPCAddress: i.Weaviate.GRPCAddress, APIKey: os.Getenv(i.Weaviate.APIKeyEnv),
			Collection: i.Weaviate.Collection})
	case "qdrant":
		return qdrant.New(qdrant.Config{Host: i.Qdrant.Host, Port: i.Qdrant.Port, APIKey: os.Getenv(i.Qdrant.APIKeyEnv), UseTLS: i.Qdrant.TLS,
			Collection: i.Qdrant.Collection})
	case "postgres":
		db, err := s.sqlDB(cfg, cfg.Server.Sessions.Database)
		if err != nil {
			return nil, err
		}
		return pgsearch.New(db, i.Postgres.Table)
	case "pinecone":
		return pinecone.New(pinecone.Config{Host: i.Pinecone.Host, APIKey: os.Getenv(i.Pinecone.APIKeyEnv)})
	}
	return nil, fmt.Errorf("no external store is named %q", cfg.Server.Index.Store) // validation refuses it first
}

// Unready names each store that does not answer ("index", "databases.main")
// with why: probes say which, so an operator knows where to look. The
// stores are asked at once, so one that hangs until ctx ends does not make
// the others look down too.
func (s *Services) Unready(ctx context.Context) map[string]error {
	out := map[string]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	check := func(what string, ready func() error) {
		wg.Go(func() {
			if err := ready(); err != nil {
				mu.Lock()
				defer mu.Unlock()
				out[what] = err
			}
		})
	}
	if s.Index != nil {
		check("index", func() error { return s.Index.Ready(ctx) })
	}
	if s.Erasures != nil {
		check("erasures", s.Erasures.Failing)
	}
	check("imports", s.undoing.Pending)
	for name, db := range s.dbs {
		check("databases."+name, func() error {
			sqlDB, err := db.DB()
			if err != nil {
				return err
			}
			return sqlDB.PingContext(ctx)
		})
	}
	wg.Wait()
	// A full disk answers a ping, and fails every write.
	for what, dir := range s.disks {
		if err := diskFull(dir); err != nil && out[what] == nil {
			out[what] = err
		}
	}
	return out
}

// Close saves the index and closes the databases.
// erase forgets a user in every store (see erase.User), recording its
// progress in the receipts so that a crash half-way is finished at the
// next start; from is the receipt of such an erasure, else nil. It runs
// through Erasures, which holds the user's writes meanwhile.
func (s *Services) erase(ctx context.Context, app, user, by string, from *erase.Receipt) (*erase.Receipt, error) {
	svcs := s.userData()
	if s.Extractor != nil { // nothing learned from them may be written after the erasure looked
		defer s.Extractor.Hold(app, user)()
	}
	record := func(r *erase.Receipt) error { return s.Receipts.Put(context.WithoutCancel(ctx), r) }
	scrub := func(ctx context.Context) error {
		for name, db := range s.dbs { // what was deleted, out of the database's files too
			if err := sqldb.Scrub(ctx, db); err != nil {
				return fmt.Errorf("erased, but database %s still holds copies in its files: %w", name, err)
			}
		}
		return nil
	}
	quiet := func(ctx context.Context) error {
		if s.Imports == nil {
			return nil
		}
		return userarchive.Quiet(ctx, s.Imports, s.process, app, user, s.logger)
	}
	return erase.User(ctx, svcs, app, user, by, erase.Options{Progress: record, Resume: from, Settle: erase.Settle, Finish: scrub, Quiet: quiet})
}

// userData are the stores that hold a user's data.
func (s *Services) userData() userdata.Services {
	svcs := userdata.Services{Sessions: s.Sessions, Artifacts: s.Artifacts, Facts: s.Facts, Caches: s.Caches}
	if idx, ok := s.Index.(*index.Index); ok {
		svcs.Index = idx
	}
	return svcs
}

// UserStores are the stores that hold something of a user besides their
// sessions: the one list erasure and the archive go through.
func (s *Services) UserStores(app, user string) []userdata.Store {
	return userdata.Stores(s.userData(), app, user)
}

// Archive is what a user's archive is written from and restored into.
func (s *Services) Archive() userarchive.Services {
	return userarchive.Services{Services: s.userData(), Imports: s.Imports, Process: s.process,
		Forget: func(ctx context.Context, app, user string) error {
			_, err := erase.User(ctx, s.userData(), app, user, "import", erase.Options{})
			return err
		}}
}

// Recover finishes what a stop left half-done, in the background: the
// erasures it left running are finished, and the imports it cut short
// undone (by an erasure, with its receipt). It returns once both have
// begun; until they end, readiness names them.
func (s *Services) Recover(ctx context.Context) error {
	if err := s.Erasures.Resume(ctx); err != nil {
		return err
	}
	var err error
	s.undoing, err = userarchive.UndoUnfinished(ctx, s.Imports, s.process, func(ctx context.Context, app, user string) error {
		r, _, err := s.Erasures.Erase(ctx, app, user, "import undone", time.Hour)
		if err == nil && !r.Verified {
			err = fmt.Errorf("the erasure's receipt is not verified: %+v", r.Stores)
		}
		return err
	}, s.logger)
	return err
}

func (s *Services) Close() error {
	var errs []error
	for _, c := range s.mcpConnections {
		errs = append(errs, c())
	}
	if s.stopWatching != nil {
		s.stopWatching()
		s.watching.Wait()
	}
	if s.Extractor != nil {
		s.Extractor.Close()
	}
	if s.Index != nil {
		errs = append(errs, s.Index.Close())
	}
	if s.sql != nil {
		errs = append(errs, s.sql.Close())
	}
	for _, db := range s.dbs {
		errs = append(errs, sqldb.Close(db))
	}
	return errors.Join(errs...)
}
