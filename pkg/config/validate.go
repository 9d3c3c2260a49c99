package config

import (
	"fmt"
	mysqldriver "github.com/go-sql-driver/mysql"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/index/pgsearch"
	"github.com/hectormem/hector/pkg/workingmemory"
)

type checker struct{ errs []*Error }

func (c *checker) add(path, format string, args ...any) {
	c.errs = append(c.errs, &Error{Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) oneOf(path, value string, allowed ...string) {
	if !slices.Contains(allowed, value) {
		c.add(path, "%q is not one of %s", value, strings.Join(allowed, ", "))
	}
}

func (c *checker) ref(path, name string, defined []string) {
	if !slices.Contains(defined, name) {
		known := "none are defined"
		if len(defined) > 0 {
			known = "defined: " + strings.Join(defined, ", ")
		}
		c.add(path, "refers to %q, which is not defined (%s)", name, known)
	}
}

func (c *checker) env(path, name string) {
	if name != "" && os.Getenv(name) == "" {
		c.add(path, "environment variable %s is not set", name)
	}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

func (cfg *Config) validate() []*Error {
	c := &checker{}
	dbs, embedders, llms := sortedKeys(cfg.Databases), sortedKeys(cfg.Embedders), sortedKeys(cfg.LLMs)
	for i, host := range cfg.Server.AllowedHosts {
		if host == "" || strings.ContainsAny(host, ":/ ") {
			c.add(fmt.Sprintf("server.allowed_hosts.%d", i), "%q is not a host name: give the name alone, such as hector.internal (no scheme, port or path)", host)
		}
	}
	for _, name := range dbs {
		db, p := cfg.Databases[name], "databases."+name
		c.oneOf(p+".driver", db.Driver, "sqlite", "postgres", "mysql")
		if db.DSN == "" {
			c.add(p+".dsn", "missing: a file path for sqlite, a connection string for postgres or mysql")
		}
		if db.MaxConnections < 0 {
			c.add(p+".max_connections", "%d is negative: give how many connections to open at most, or leave it out", db.MaxConnections)
		}
		if db.Driver == "sqlite" && db.MaxConnections == 1 {
			c.add(p+".max_connections", "1 is too few for SQLite: writes hold a connection of their own, reads need another; give 2 or more, or leave it out")
		}
		if db.Driver == "mysql" {
			if _, err := mysqldriver.ParseDSN(db.DSN); err != nil && db.DSN != "" {
				c.add(p+".dsn", "not a MySQL DSN such as user:password@tcp(host:3306)/database")
			}
		}
	}
	for _, name := range embedders {
		e, p := cfg.Embedders[name], "embedders."+name
		c.oneOf(p+".type", e.Type, "hash", "openai", "ollama")
		switch e.Type {
		case "hash":
			if e.Dimensions != 0 && (e.Dimensions < 16 || e.Dimensions > 8192) {
				c.add(p+".dimensions", "%d is outside 16..8192", e.Dimensions)
			}
		case "openai", "ollama":
			if e.BaseURL == "" {
				c.add(p+".base_url", "missing")
			}
			if e.Model == "" {
				c.add(p+".model", "missing")
			}
			if e.Dimensions <= 0 {
				c.add(p+".dimensions", "missing: the model's vector length, such as 1536")
			}
			c.env(p+".api_key_env", e.APIKeyEnv)
		}
	}
	for _, name := range llms {
		l, p := cfg.LLMs[name], "llms."+name
		if l.BaseURL == "" {
			c.add(p+".base_url", "missing")
		}
		if l.Model == "" {
			c.add(p+".model", "missing")
		}
		c.env(p+".api_key_env", l.APIKeyEnv)
	}
	for _, name := range sortedKeys(cfg.Agents) {
		a, p := cfg.Agents[name], "agents."+name
		if a.LLM == "" {
			c.add(p+".llm", "missing: name one of llms")
		} else {
			c.ref(p+".llm", a.LLM, llms)
		}
		if _, err := workingmemory.New(a.WorkingMemory); err != nil {
			key, msg, _ := strings.Cut(err.Error(), ": ")
			c.add(p+"."+key, "%s", msg)
		}
		if a.Search.MaxResults < 0 {
			c.add(p+".search.max_results", "must be positive, got %d", a.Search.MaxResults)
		}
		if a.MaxSteps < 0 {
			c.add(p+".max_steps", "must be positive, got %d", a.MaxSteps)
		}
		c.oneOf(p+".concurrent_runs", a.ConcurrentRuns, "serialize", "reject")
		c.oneOf(p+".summarizer", a.Summarizer, "extractive", "llm")
		c.oneOf(p+".facts.scope", a.Facts.Scope, "app", "user", "session")
		c.oneOf(p+".facts.write_policy", a.Facts.WritePolicy, "auto", "approvers", "off")
		names := map[string]bool{}
		for i, m := range a.MCPServers {
			mp := fmt.Sprintf("%s.mcp_servers.%d", p, i)
			switch {
			case m.Name == "":
				c.add(mp+".name", "missing")
			case names[m.Name]:
				c.add(mp+".name", "%q is used twice", m.Name)
			}
			names[m.Name] = true
			if (len(m.Command) == 0) == (m.URL == "") {
				c.add(mp, "give a command (a list: program and arguments) or a url, not both")
			}
			for _, env := range m.HeadersEnv {
				c.env(mp+".headers_env", env)
			}
			if m.Cache != nil {
				if d, err := time.ParseDuration(m.Cache.TTL); err != nil || d <= 0 {
					c.add(mp+".cache.ttl", "%q is not a positive duration such as 5m: a cached result must expire", m.Cache.TTL)
				}
			}
		}
		if g := a.MemoryGateway; g != nil {
			if g.URL == "" {
				c.add(p+".memory_gateway.url", "missing")
			}
			if g.UserKeyEnv == "" {
				c.add(p+".memory_gateway.user_key_env", "missing: name the variable holding the gateway's user key")
			}
			c.env(p+".memory_gateway.user_key_env", g.UserKeyEnv)
			for _, sc := range g.Scope {
				c.oneOf(p+".memory_gateway.scope", sc, "current_chat", "resources", "all_user_memory")
			}
			if g.TopK < 0 || g.TopK > 100 || g.TimeoutMS < 0 {
				c.add(p+".memory_gateway", "top_k must be in 0..100 and timeout_ms positive")
			}
		}
	}
	s := cfg.Server
	c.oneOf("server.sessions.backend", s.Sessions.Backend, "inmemory", "sql")
	if s.Sessions.Cache < 0 {
		c.add("server.sessions.cache", "must be 0 (no cache) or a number of sessions")
	}
	if s.Sessions.Backend == "sql" {
		c.ref("server.sessions.database", s.Sessions.Database, dbs)
	}
	c.oneOf("server.index.type", string(s.Index.Type), string(index.KindKeyword), string(index.KindVector), string(index.KindHybrid))
	if s.Index.Type != index.KindKeyword {
		c.ref("server.index.embedder", s.Index.Embedder, embedders)
		switch {
		case s.Index.Store == "postgres":
			c.add("server.index.store", "postgres holds keyword indexes only: use weaviate or qdrant for a %s index", s.Index.Type)
		case s.Index.Store == "pinecone" && s.Index.Type != index.KindVector:
			c.add("server.index.store", "pinecone holds vector indexes only: use weaviate or qdrant for a %s index", s.Index.Type)
		default:
			c.oneOf("server.index.store", s.Index.Store, "memory", "chromem", "pinecone", "qdrant", "weaviate")
		}
	} else if s.Index.Store != "" {
		c.oneOf("server.index.store", s.Index.Store, "postgres", "qdrant", "weaviate")
	}
	if s.Index.Store == "postgres" {
		if d := cfg.Databases[s.Sessions.Database]; s.Sessions.Backend != "sql" || d.Driver != "postgres" {
			c.add("server.index.store", "postgres keeps the index in the sessions' database, which must be PostgreSQL (server.sessions: {backend: sql, database: <a postgres database>})")
		}
		if err := pgsearch.CheckTable(s.Index.Postgres.Table); err != nil {
			c.add("server.index.postgres.table", "%v", err)
		}
	}
	if s.Index.External() && *s.Index.Persist {
		c.add("server.index.persist", "an index in %s is kept by %[1]s: leave persist out", s.Index.Store)
	}
	if s.Index.Store == "weaviate" {
		if s.Index.Weaviate.URL == "" {
			c.add("server.index.weaviate.url", "missing: the REST address of the Weaviate server, such as http://localhost:8080")
		}
		c.env("server.index.weaviate.api_key_env", s.Index.Weaviate.APIKeyEnv)
	}
	if s.Index.Store == "pinecone" {
		if s.Index.Pinecone.Host == "" {
			c.add("server.index.pinecone.host", "missing: the index's host, https://<index>-<project>.svc.<region>.pinecone.io")
		}
		if s.Index.Pinecone.APIKeyEnv == "" {
			c.add("server.index.pinecone.api_key_env", "missing: name the variable holding the Pinecone API key")
		}
		c.env("server.index.pinecone.api_key_env", s.Index.Pinecone.APIKeyEnv)
	}
	if s.Index.Store == "qdrant" {
		if s.Index.Qdrant.Host == "" {
			c.add("server.index.qdrant.host", "missing: the host of the Qdrant server (its gRPC port goes in port, default 6334)")
		}
		c.env("server.index.qdrant.api_key_env", s.Index.Qdrant.APIKeyEnv)
	}
	c.oneOf("server.mcp.write_policy", s.MCP.WritePolicy, "auto", "approvers", "off")
	c.oneOf("server.artifacts.backend", s.Artifacts.Backend, "filesystem", "sql", "inmemory")
	if s.Artifacts.Backend == "sql" {
		c.ref("server.artifacts.database", s.Artifacts.Database, dbs)
	}
	if s.Artifacts.MaxSizeMB < 0 {
		c.add("server.artifacts.max_size_mb", "must be positive")
	}
	if s.Limits.MaxBodyMB < 0 || s.Limits.RequestsPerSecond < 0 || s.Limits.Burst < 0 {
		c.add("server.limits", "limits must be positive")
	}
	c.oneOf("server.facts.backend", s.Facts.Backend, "sql", "inmemory")
	if s.Facts.Backend == "sql" {
		c.ref("server.facts.database", s.Facts.Database, dbs)
	}
	if s.Facts.MaxScopeChars < 0 {
		c.add("server.facts.max_scope_chars", "must be positive")
	}
	cfg.validateAuth(c)
	return c.errs
}

func (cfg *Config) validateAuth(c *checker) {
	seen := map[string]bool{}
	for i, k := range cfg.Server.Auth.APIKeys {
		p := fmt.Sprintf("server.auth.api_keys.%d", i)
		key := k.Key
		if k.KeyEnv != "" {
			key = os.Getenv(k.KeyEnv)
			c.env(p+".key_env", k.KeyEnv)
		}
		switch {
		case k.Key == "" && k.KeyEnv == "":
			c.add(p, "needs key (usually ${SOME_VARIABLE}) or key_env")
		case key != "" && len(key) < 16:
			c.add(p+".key", "is shorter than 16 characters: use a long random key")
		case seen[key] && key != "":
			c.add(p+".key", "is the same key as an earlier one")
		}
		seen[key] = true
		c.oneOf(p+".role", k.Role, "admin", "app", "user")
		if (k.Role == "app" || k.Role == "user") && k.App == "" {
			c.add(p+".app", "missing: a %s key is limited to one app", k.Role)
		}
		if k.Role == "user" && k.User == "" {
			c.add(p+".user", "missing: a user key is limited to one user")
		}
	}
	if j := cfg.Server.Auth.JWT; j != nil {
		if (j.HS256SecretEnv == "") == (j.RS256PublicKey == "") {
			c.add("server.auth.jwt", "set exactly one of hs256_secret_env and rs256_public_key")
		}
		c.env("server.auth.jwt.hs256_secret_env", j.HS256SecretEnv)
	}
}
