package config

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"gorm.io/gorm"

	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/embed"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/sqldb"
)

// Services are the stores a configuration describes, opened and wired:
// deleting a session deletes its artifacts and index entries.
type Services struct {
	Sessions  session.Service
	Artifacts artifacts.Service
	Index     *index.Index
	Facts     *facts.Service
	dbs       map[string]*gorm.DB
}

// Open opens the databases and stores cfg describes.
func Open(ctx context.Context, cfg *Config, logger *slog.Logger, opts ...OpenOption) (*Services, error) {
	var o openOptions
	for _, opt := range opts {
		opt(&o)
	}
	s := &Services{dbs: map[string]*gorm.DB{}}
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

func (s *Services) db(cfg *Config, name string) (*gorm.DB, error) {
	if db := s.dbs[name]; db != nil {
		return db, nil
	}
	d := cfg.Databases[name]
	db, err := sqldb.Open(d.Driver, d.DSN)
	if err != nil {
		return nil, fmt.Errorf("databases.%s: %w", name, err)
	}
	s.dbs[name] = db
	return db, nil
}

func (s *Services) open(ctx context.Context, cfg *Config, logger *slog.Logger, o openOptions) error {
	srv := cfg.Server
	if err := os.MkdirAll(srv.DataDir, 0o750); err != nil {
		return fmt.Errorf("server.data_dir: %w", err)
	}
	switch srv.Sessions.Backend {
	case "inmemory":
		s.Sessions = session.NewInMemoryService()
	default:
		db, err := s.db(cfg, srv.Sessions.Database)
		if err != nil {
			return err
		}
		if s.Sessions, err = session.NewSQLService(db); err != nil {
			return err
		}
	}

	maxSize := artifacts.WithMaxSize(int64(srv.Artifacts.MaxSizeMB) << 20)
	var err error
	switch srv.Artifacts.Backend {
	case "inmemory":
		s.Artifacts = artifacts.NewInMemory(maxSize)
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
	if srv.Facts.Backend == "sql" {
		db, err := s.db(cfg, srv.Facts.Database)
		if err != nil {
			return err
		}
		s.Facts, err = facts.NewSQL(ctx, db, key, facts.WithPolicy(policy))
		if err != nil {
			return err
		}
	} else if s.Facts, err = facts.NewInMemory(key, facts.WithPolicy(policy)); err != nil {
		return err
	}
	// A session's facts go with it.
	s.Sessions.OnDelete(func(ctx context.Context, app, user, id string) error {
		_, err := s.Facts.Forget(ctx, facts.SessionScope(app, user, id), "all")
		return err
	})

	opts := []index.Option{index.WithLogger(logger), index.WithStemming(srv.Index.Stemming)}
	if !o.noCatchUp { // following the sessions: catch up now, clear deleted sessions from now on
		opts = append(opts, index.WithSessions(s.Sessions))
	}
	if *srv.Index.Persist {
		path := cfg.IndexSnapshot()
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			return fmt.Errorf("server.data_dir: %w", err)
		}
		opts = append(opts, index.WithSnapshot(path))
	}
	if srv.Index.Store == "qdrant" {
		q := srv.Index.Qdrant
		opts = append(opts, index.WithQdrant(index.QdrantConfig{Host: q.Host, Port: q.Port, APIKey: os.Getenv(q.APIKeyEnv), UseTLS: q.TLS, Collection: q.Collection}))
	}
	switch srv.Index.Type {
	case "keyword":
		s.Index, err = index.NewKeyword(opts...)
	default:
		e, eerr := BuildEmbedder(cfg.Embedders[srv.Index.Embedder])
		if eerr != nil {
			return fmt.Errorf("embedders.%s: %w", srv.Index.Embedder, eerr)
		}
		if srv.Index.Type == "vector" {
			s.Index, err = index.NewVector(e, opts...)
		} else {
			s.Index, err = index.NewHybrid(e, opts...)
		}
	}
	return err
}

// BuildEmbedder makes the embedder an embedders entry describes.
func BuildEmbedder(e Embedder) (embed.Embedder, error) {
	cfg := embed.HTTPConfig{BaseURL: e.BaseURL, Model: e.Model, APIKey: os.Getenv(e.APIKeyEnv), Dimensions: e.Dimensions, BatchSize: e.BatchSize}
	switch e.Type {
	case "openai":
		return embed.NewOpenAI(cfg)
	case "ollama":
		return embed.NewOllama(cfg)
	default:
		return embed.NewHash(e.Dimensions)
	}
}

// Ready reports whether the databases answer.
func (s *Services) Ready(ctx context.Context) error {
	for name, db := range s.dbs {
		sqlDB, err := db.DB()
		if err == nil {
			err = sqlDB.PingContext(ctx)
		}
		if err != nil {
			return fmt.Errorf("database %s: %w", name, err)
		}
	}
	return nil
}

// Close saves the index and closes the databases.
func (s *Services) Close() error {
	var errs []error
	if s.Index != nil {
		errs = append(errs, s.Index.Close())
	}
	for _, db := range s.dbs {
		errs = append(errs, sqldb.Close(db))
	}
	return errors.Join(errs...)
}
