package config

import (
	"fmt"
	"slices"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/pgsearch"
	"github.com/hectormem/hector/pkg/index/qdrant"
	"github.com/hectormem/hector/pkg/index/weaviate"
)

// indexStore is what the configuration knows of one place an index can be
// held (server.index.store). Adding a store is its package, its settings
// in Index, one entry here and how pkg/app opens it (app.openStore).
type indexStore struct {
	kinds []index.Kind // the kinds it holds
	// external stores are engines that every replica shares; the others
	// are in the process.
	external bool
	defaults func(i *Index)
	validate func(c *checker, cfg *Config)
	// feed names its place in the change feed: one per store and
	// collection, so two collections each get every event.
	feed func(i Index) string
	// describe says where it keeps the index, for the start-up lines.
	describe func(i Index) string
}

var everyKind = []index.Kind{index.KindKeyword, index.KindVector, index.KindHybrid}

// indexStores are the stores, by the name server.index.store gives.
var indexStores = map[string]indexStore{
	"memory":  {kinds: everyKind},
	"chromem": {kinds: []index.Kind{index.KindVector, index.KindHybrid}},
	"weaviate": {
		kinds: everyKind, external: true,
		defaults: func(i *Index) {
			if i.Weaviate.Collection == "" {
				i.Weaviate.Collection = weaviate.DefaultCollection
			}
		},
		validate: func(c *checker, cfg *Config) {
			w := cfg.Server.Index.Weaviate
			if w.URL == "" {
				c.add("server.index.weaviate.url", "missing: the REST address of the Weaviate server, such as http://localhost:8080")
			}
			c.env("server.index.weaviate.api_key_env", w.APIKeyEnv)
		},
		feed: func(i Index) string { return "weaviate/" + i.Weaviate.Collection },
		describe: func(i Index) string {
			return fmt.Sprintf("in Weaviate at %s collection %s", i.Weaviate.URL, i.Weaviate.Collection)
		},
	},
	"qdrant": {
		kinds: everyKind, external: true,
		defaults: func(i *Index) {
			if i.Qdrant.Port == 0 {
				i.Qdrant.Port = 6334
			}
			if i.Qdrant.Collection == "" {
				i.Qdrant.Collection = qdrant.DefaultCollection
			}
		},
		validate: func(c *checker, cfg *Config) {
			if cfg.Server.Index.Qdrant.Host == "" {
				c.add("server.index.qdrant.host", "missing: the host of the Qdrant server (its gRPC port goes in port, default 6334)")
			}
			c.env("server.index.qdrant.api_key_env", cfg.Server.Index.Qdrant.APIKeyEnv)
		},
		feed: func(i Index) string { return "qdrant/" + i.Qdrant.Collection },
		describe: func(i Index) string {
			return fmt.Sprintf("in Qdrant at %s:%d collection %s", i.Qdrant.Host, i.Qdrant.Port, i.Qdrant.Collection)
		},
	},
	"postgres": {
		kinds: []index.Kind{index.KindKeyword}, external: true,
		defaults: func(i *Index) {
			if i.Postgres.Table == "" {
				i.Postgres.Table = pgsearch.DefaultTable
			}
		},
		validate: func(c *checker, cfg *Config) {
			s := cfg.Server
			if d := cfg.Databases[s.Sessions.Database]; s.Sessions.Backend != "sql" || d.Driver != "postgres" {
				c.add("server.index.store", "postgres keeps the index in the sessions' database, which must be PostgreSQL (server.sessions: {backend: sql, database: <a postgres database>})")
			}
			if err := pgsearch.CheckTable(s.Index.Postgres.Table); err != nil {
				c.add("server.index.postgres.table", "%v", err)
			}
		},
		feed: func(i Index) string { return "postgres/" + i.Postgres.Table },
		describe: func(i Index) string {
			return "in the sessions' database, table " + i.Postgres.Table
		},
	},
	"pinecone": {
		kinds: []index.Kind{index.KindVector}, external: true,
		validate: func(c *checker, cfg *Config) {
			p := cfg.Server.Index.Pinecone
			if p.Host == "" {
				c.add("server.index.pinecone.host", "missing: the index's host, https://<index>-<project>.svc.<region>.pinecone.io")
			}
			if p.APIKeyEnv == "" {
				c.add("server.index.pinecone.api_key_env", "missing: name the variable holding the Pinecone API key")
			}
			c.env("server.index.pinecone.api_key_env", p.APIKeyEnv)
		},
		feed:     func(i Index) string { return "pinecone/" + i.Pinecone.Host },
		describe: func(i Index) string { return "in Pinecone at " + i.Pinecone.Host },
	},
}

// storeNames lists the stores that hold kind.
func storeNames(kind index.Kind) []string {
	var names []string
	for _, name := range sortedKeys(indexStores) {
		if slices.Contains(indexStores[name].kinds, kind) {
			names = append(names, name)
		}
	}
	return names
}

// Feed names an external index's place in the change feed: one per store
// and collection, so two collections each get every event. An index in the
// process has none ("").
func (i Index) Feed() string {
	if feed := indexStores[i.Store].feed; feed != nil {
		return feed(i)
	}
	return ""
}
