package config

import (
	"os"
	"path/filepath"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/pgsearch"
	"github.com/hectormem/hector/pkg/index/qdrant"
	"github.com/hectormem/hector/pkg/index/weaviate"
)

// Defaults that make an empty configuration a working server.
const (
	DefaultAddress     = "127.0.0.1:8080"
	DefaultDataDir     = "data"
	defaultDatabase    = "default"
	defaultEmbedder    = "default"
	DefaultArtifactMB  = 64
	DefaultMaxBodyMB   = 16
	DefaultRatePerSec  = 100
	DefaultBurst       = 200
	DefaultSearchLimit = 5
	// DataDirEnv names the data directory when neither the file nor the
	// command line does.
	DataDirEnv = "HECTOR_DATA_DIR"
)

// Zero is the zero configuration: SQLite, artifacts, the facts key and a
// persisted keyword index, all in the data directory (o.DataDir, else
// $HECTOR_DATA_DIR, else ./data), on 127.0.0.1:8080.
func Zero(o Overrides) *Config {
	c := &Config{}
	c.Server.DataDir = o.DataDir
	c.applyDefaults()
	return c
}

func (c *Config) applyDefaults() {
	s := &c.Server
	if s.Address == "" {
		s.Address = DefaultAddress
	}
	if s.DataDir == "" {
		s.DataDir = os.Getenv(DataDirEnv)
	}
	if s.DataDir == "" {
		s.DataDir = DefaultDataDir
	}
	if c.Databases == nil {
		c.Databases = map[string]Database{}
	}
	if s.Sessions.Backend == "" {
		s.Sessions.Backend = "sql"
	}
	if s.Sessions.Backend == "sql" && s.Sessions.Database == "" {
		s.Sessions.Database = c.onlyDatabase()
	}
	if s.Sessions.Database == defaultDatabase && len(c.Databases) == 0 {
		c.Databases[defaultDatabase] = Database{Driver: "sqlite", DSN: filepath.Join(s.DataDir, "hector.db")}
	}
	if s.Index.Type == "" {
		s.Index.Type = index.KindKeyword
		s.Index.Stemming = true
	}
	if s.Index.Persist == nil {
		persist := !s.Index.External()
		s.Index.Persist = &persist
	}
	if s.Index.Store == "postgres" && s.Index.Postgres.Table == "" {
		s.Index.Postgres.Table = pgsearch.DefaultTable
	}
	if s.Index.Store == "weaviate" && s.Index.Weaviate.Collection == "" {
		s.Index.Weaviate.Collection = weaviate.DefaultCollection
	}
	if s.Index.Type != index.KindKeyword {
		if s.Index.Store == "" {
			s.Index.Store = "memory"
		}
		if s.Index.Embedder == "" {
			s.Index.Embedder = c.onlyEmbedder()
		}
		if s.Index.Embedder == defaultEmbedder && len(c.Embedders) == 0 {
			c.Embedders = map[string]Embedder{defaultEmbedder: {Type: "hash"}}
		}
	}
	if s.Index.Store == "qdrant" {
		if s.Index.Qdrant.Port == 0 {
			s.Index.Qdrant.Port = 6334
		}
		if s.Index.Qdrant.Collection == "" {
			s.Index.Qdrant.Collection = qdrant.DefaultCollection
		}
	}
	if s.MCP.WritePolicy == "" {
		s.MCP.WritePolicy = "auto"
	}
	if s.Artifacts.Backend == "" {
		s.Artifacts.Backend = "filesystem"
	}
	if s.Artifacts.Backend == "filesystem" && s.Artifacts.Dir == "" {
		s.Artifacts.Dir = filepath.Join(s.DataDir, "artifacts")
	}
	if s.Artifacts.Backend == "sql" && s.Artifacts.Database == "" {
		s.Artifacts.Database = s.Sessions.Database
	}
	if s.Artifacts.MaxSizeMB == 0 {
		s.Artifacts.MaxSizeMB = DefaultArtifactMB
	}
	if s.Facts.Backend == "" {
		s.Facts.Backend = "inmemory"
		if s.Sessions.Backend == "sql" {
			s.Facts.Backend = "sql"
		}
	}
	if s.Facts.Backend == "sql" && s.Facts.Database == "" {
		s.Facts.Database = s.Sessions.Database
	}
	if s.Limits.MaxBodyMB == 0 {
		s.Limits.MaxBodyMB = DefaultMaxBodyMB
	}
	if s.Limits.RequestsPerSecond == 0 {
		s.Limits.RequestsPerSecond = DefaultRatePerSec
	}
	if s.Limits.Burst == 0 {
		s.Limits.Burst = DefaultBurst
	}
	for name, a := range c.Agents {
		if a.App == "" {
			a.App = name
		}
		if a.WorkingMemory.Type == "" {
			a.WorkingMemory.Type = "all"
		}
		if a.Search.MaxResults == 0 {
			a.Search.MaxResults = DefaultSearchLimit
		}
		if a.ConcurrentRuns == "" {
			a.ConcurrentRuns = "serialize"
		}
		if a.Summarizer == "" {
			a.Summarizer = "extractive"
		}
		if a.Facts.Scope == "" {
			a.Facts.Scope = "user"
		}
		if a.Facts.WritePolicy == "" {
			a.Facts.WritePolicy = c.defaultWritePolicy(a.Facts.Scope)
		}
		c.Agents[name] = a
	}
}

// onlyDatabase names the one database defined, or the implicit default.
func (c *Config) onlyDatabase() string {
	if len(c.Databases) == 1 {
		for name := range c.Databases {
			return name
		}
	}
	return defaultDatabase
}

func (c *Config) onlyEmbedder() string {
	if len(c.Embedders) == 1 {
		for name := range c.Embedders {
			return name
		}
	}
	return defaultEmbedder
}

// defaultWritePolicy is an agent's facts write policy when it names none:
// approvers when some credential may approve; else auto for one user's or
// one session's facts, and off for the app's, which every user shares.
func (c *Config) defaultWritePolicy(scope string) string {
	for _, k := range c.Server.Auth.APIKeys {
		if k.Approver {
			return "approvers"
		}
	}
	if scope == "app" {
		return "off"
	}
	return "auto"
}
