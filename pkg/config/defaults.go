package config

import (
	"os"
	"path/filepath"
	"slices"

	"github.com/hectormem/hector/pkg/index"
)

// Defaults that make an empty configuration a working server.
const (
	DefaultAddress  = "127.0.0.1:8080"
	DefaultDataDir  = "data"
	defaultDatabase = "default"
	defaultEmbedder = "default"
	// defaultIndexEmbedder is a vector or hybrid index's embedder when the
	// configuration defines none: the built-in model that finds the most.
	defaultIndexEmbedder = "e5-small"
	DefaultArtifactMB    = 64
	DefaultMaxBodyMB     = 16
	DefaultRatePerSec    = 100
	DefaultBurst         = 200
	DefaultSearchLimit   = 5
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
	s.Sessions.applyDefaults(c)
	s.Index.applyDefaults(c)
	for name, e := range c.Embedders {
		if e.Type == "builtin" && e.Model == "" {
			e.Model = builtinModels["builtin"]
			c.Embedders[name] = e
		}
	}
	if s.MCP.WritePolicy == "" {
		s.MCP.WritePolicy = "auto"
	}
	s.Artifacts.applyDefaults(s)
	s.Facts.applyDefaults(s)
	s.Limits.applyDefaults()
	for name, a := range c.Agents {
		a.applyDefaults(c, name)
		c.Agents[name] = a
	}
}

func (s *Sessions) applyDefaults(c *Config) {
	if s.Backend == "" {
		s.Backend = "sql"
	}
	if s.Backend == "sql" && s.Database == "" {
		s.Database = c.onlyDatabase()
	}
	if s.Database == defaultDatabase && len(c.Databases) == 0 {
		c.Databases[defaultDatabase] = Database{Driver: "sqlite", DSN: filepath.Join(c.Server.DataDir, "hector.db")}
	}
}

func (i *Index) applyDefaults(c *Config) {
	if i.Store == "" {
		i.Store = "memory"
	}
	if kinds := indexStores[i.Store].kinds; i.Type == "" && len(kinds) > 0 {
		// Words and meaning in process, where hybrid e5-small finds more
		// than keyword search in every category of the public benchmarks
		// (hector eval on LoCoMo and LongMemEval, docs/evaluation.md);
		// words in an engine, whose own fusion is not measured; meaning in
		// a store of vectors only.
		switch {
		case !i.External() && slices.Contains(kinds, index.KindHybrid):
			i.Type = index.KindHybrid
		case slices.Contains(kinds, index.KindKeyword):
			i.Type = index.KindKeyword
		default:
			i.Type = kinds[len(kinds)-1]
		}
	}
	if i.Stemming == nil {
		stem := true
		i.Stemming = &stem
	}
	if i.Persist == nil {
		persist := !i.External()
		i.Persist = &persist
	}
	if store := indexStores[i.Store]; store.defaults != nil {
		store.defaults(i)
	}
	if i.Type != index.KindKeyword {
		if i.Embedder == "" {
			i.Embedder = c.onlyEmbedder()
		}
		if model, ok := builtinModels[i.Embedder]; ok && c.Embedders[i.Embedder].Type == "" {
			if c.Embedders == nil {
				c.Embedders = map[string]Embedder{}
			}
			c.Embedders[i.Embedder] = Embedder{Type: "builtin", Model: model}
		}
	}
	if i.Vectors == "" {
		i.Vectors = "inline"
		if e := c.Embedders[i.Embedder]; i.Type == index.KindHybrid && !e.fast() {
			i.Vectors = "background"
		}
	}
	if i.MaxVectorLag == 0 {
		i.MaxVectorLag = index.DefaultVectorLag
	}
}

func (a *Artifacts) applyDefaults(s *Server) {
	if a.Backend == "" {
		a.Backend = "filesystem"
	}
	if a.Backend == "filesystem" && a.Dir == "" {
		a.Dir = filepath.Join(s.DataDir, "artifacts")
	}
	if a.Backend == "sql" && a.Database == "" {
		a.Database = s.Sessions.Database
	}
	if a.MaxSizeMB == 0 {
		a.MaxSizeMB = DefaultArtifactMB
	}
}

func (f *Facts) applyDefaults(s *Server) {
	if f.Backend == "" {
		f.Backend = "inmemory"
		if s.Sessions.Backend == "sql" {
			f.Backend = "sql"
		}
	}
	if f.Backend == "sql" && f.Database == "" {
		f.Database = s.Sessions.Database
	}
}

func (l *Limits) applyDefaults() {
	if l.MaxBodyMB == 0 {
		l.MaxBodyMB = DefaultMaxBodyMB
	}
	if l.RequestsPerSecond == 0 {
		l.RequestsPerSecond = DefaultRatePerSec
	}
	if l.Burst == 0 {
		l.Burst = DefaultBurst
	}
}

func (a *Agent) applyDefaults(c *Config, name string) {
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

// onlyEmbedder names the one embedder defined, or the built-in model that
// finds the most when none is.
func (c *Config) onlyEmbedder() string {
	if len(c.Embedders) == 0 {
		return defaultIndexEmbedder
	}
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
