package config

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"time"

	mysqldriver "github.com/go-sql-driver/mysql"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/workingmemory"
)

type checker struct{ errs []*Error }

func (c *checker) add(path, format string, args ...any) {
	c.errs = append(c.errs, &Error{Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) oneOf(path, value string, allowed ...string) {
	if !slices.Contains(allowed, value) {
		c.add(path, "%q is not one of %s%s", value, strings.Join(allowed, ", "), didYouMean(value, allowed))
		c.errs[len(c.errs)-1].bad = value
	}
}

func (c *checker) ref(path, name string, defined []string) {
	if !slices.Contains(defined, name) {
		known := "none are defined"
		if len(defined) > 0 {
			known = "defined: " + strings.Join(defined, ", ")
		}
		c.add(path, "refers to %q, which is not defined (%s)%s", name, known, didYouMean(name, defined))
		c.errs[len(c.errs)-1].bad = name
	}
}

// didYouMean names the one of candidates nearest to got, when it is a
// near miss: a letter or two off, or two letters swapped.
func didYouMean(got string, candidates []string) string {
	best, bestDist := "", 3
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(got), strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" || bestDist >= len(got) {
		return ""
	}
	return fmt.Sprintf(": did you mean %q?", best)
}

// editDistance counts the edits (a letter added, removed, changed, or two
// next to each other swapped) that make a into b.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}

func (c *checker) env(path, name string) {
	if name != "" && os.Getenv(name) == "" {
		c.errs = append(c.errs, &Error{Path: path, Unset: name, Msg: fmt.Sprintf("environment variable %s is not set", name)})
	}
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }

// validate checks every section and returns every mistake it finds.
func (cfg *Config) validate() []*Error {
	c := &checker{}
	dbs, embedders, llms := sortedKeys(cfg.Databases), sortedKeys(cfg.Embedders), sortedKeys(cfg.LLMs)
	for _, name := range dbs {
		cfg.Databases[name].validate(c, "databases."+name)
	}
	for _, name := range embedders {
		cfg.Embedders[name].validate(c, "embedders."+name)
	}
	for _, name := range llms {
		cfg.LLMs[name].validate(c, "llms."+name)
	}
	for _, name := range sortedKeys(cfg.Agents) {
		cfg.Agents[name].validate(c, "agents."+name, llms)
		if cfg.Agents[name].Facts.Extract && cfg.Server.Extraction.LLM == "" {
			c.add("agents."+name+".facts.extract", "needs server.extraction.llm: the model that reads the conversations")
		}
	}
	s := cfg.Server
	for i, host := range s.AllowedHosts {
		if host == "" || strings.ContainsAny(host, ":/ ") {
			c.add(fmt.Sprintf("server.allowed_hosts.%d", i), "%q is not a host name: give the name alone, such as hector.internal (no scheme, port or path)", host)
		}
	}
	s.Sessions.validate(c, dbs)
	s.Index.validate(c, cfg, embedders)
	c.oneOf("server.mcp.write_policy", s.MCP.WritePolicy, "auto", "approvers", "off")
	s.Artifacts.validate(c, dbs)
	s.Facts.validate(c, dbs)
	s.Extraction.validate(c, llms)
	if s.Limits.MaxBodyMB < 0 || s.Limits.RequestsPerSecond < 0 || s.Limits.Burst < 0 {
		c.add("server.limits", "limits must be positive")
	}
	cfg.validateAuth(c)
	return c.errs
}

func (db Database) validate(c *checker, p string) {
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

func (e Embedder) validate(c *checker, p string) {
	c.oneOf(p+".type", e.Type, "builtin", "hash", "openai", "ollama")
	if e.Type != "openai" && e.Type != "ollama" {
		for _, v := range [][2]string{{"query_prefix", e.QueryPrefix}, {"document_prefix", e.DocumentPrefix}} {
			if v[1] != "" {
				c.add(p+"."+v[0], "only for an API's model (type openai or ollama): a built-in model marks its inputs itself")
			}
		}
	}
	switch e.Type {
	case "builtin":
		c.oneOf(p+".model", e.Model, sortedKeys(BuiltinDimensions)...)
		if want := BuiltinDimensions[e.Model]; e.Dimensions != 0 && e.Dimensions != want && want != 0 {
			c.add(p+".dimensions", "the built-in %s model has %d dimensions: leave dimensions out", e.Model, want)
		}
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

func (l LLM) validate(c *checker, p string) {
	if l.BaseURL == "" {
		c.add(p+".base_url", "missing")
	}
	if l.Model == "" {
		c.add(p+".model", "missing")
	}
	c.env(p+".api_key_env", l.APIKeyEnv)
}

func (a Agent) validate(c *checker, p string, llms []string) {
	if a.LLM == "" {
		c.add(p+".llm", "missing: name one of llms")
	} else {
		c.ref(p+".llm", a.LLM, llms)
	}
	if _, err := workingmemory.New(a.WorkingMemory); err != nil {
		var fe *workingmemory.FieldError
		if !errors.As(err, &fe) {
			c.add(p+".working_memory", "%v", err)
		} else {
			c.add(p+".working_memory."+fe.Key, "%s", fe.Msg)
		}
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
		m.validate(c, mp)
	}
	if a.MemoryGateway != nil {
		a.MemoryGateway.validate(c, p+".memory_gateway")
	}
}

func (m MCPServer) validate(c *checker, p string) {
	if (len(m.Command) == 0) == (m.URL == "") {
		c.add(p, "give a command (a list: program and arguments) or a url, not both")
	}
	for _, env := range m.HeadersEnv {
		c.env(p+".headers_env", env)
	}
	if m.Cache != nil {
		if d, err := time.ParseDuration(m.Cache.TTL); err != nil || d <= 0 {
			c.add(p+".cache.ttl", "%q is not a positive duration such as 5m: a cached result must expire", m.Cache.TTL)
		}
	}
}

func (g MemoryGateway) validate(c *checker, p string) {
	if g.URL == "" {
		c.add(p+".url", "missing")
	}
	if g.UserKeyEnv == "" {
		c.add(p+".user_key_env", "missing: name the variable holding the gateway's user key")
	}
	c.env(p+".user_key_env", g.UserKeyEnv)
	for _, sc := range g.Scope {
		c.oneOf(p+".scope", sc, "current_chat", "resources", "all_user_memory")
	}
	if g.TopK < 0 || g.TopK > 100 || g.TimeoutMS < 0 {
		c.add(p, "top_k must be in 0..100 and timeout_ms positive")
	}
}

func (s Sessions) validate(c *checker, dbs []string) {
	c.oneOf("server.sessions.backend", s.Backend, "inmemory", "sql")
	if s.Cache < 0 {
		c.add("server.sessions.cache", "must be 0 (no cache) or a number of sessions")
	}
	if s.Backend == "sql" {
		c.ref("server.sessions.database", s.Database, dbs)
	}
}

func (i Index) validate(c *checker, cfg *Config, embedders []string) {
	c.oneOf("server.index.type", string(i.Type), string(index.KindKeyword), string(index.KindVector), string(index.KindHybrid))
	if i.Type != index.KindKeyword {
		c.ref("server.index.embedder", i.Embedder, embedders)
	}
	c.oneOf("server.index.vectors", i.Vectors, "inline", "background")
	if i.Vectors == "background" && i.Type != index.KindHybrid {
		c.add("server.index.vectors", "a %s index embeds its documents as they are written: background vectors are for a hybrid index, whose keyword terms find a document until its vector comes", i.Type)
	}
	if i.MaxVectorLag < 0 {
		c.add("server.index.max_vector_lag", "%d is negative: say how many changes vectors may lag behind (default %d)", i.MaxVectorLag, index.DefaultVectorLag)
	}
	store, known := indexStores[i.Store]
	switch {
	case !known:
		c.oneOf("server.index.store", i.Store, sortedKeys(indexStores)...)
		return
	case !slices.Contains(store.kinds, i.Type) && slices.Contains(everyKind, i.Type):
		c.add("server.index.store", "%s holds %s indexes only: use %s for a %s index", i.Store, kindList(store.kinds), strings.Join(storeNames(i.Type), ", "), i.Type)
	}
	if store.external && *i.Persist {
		c.add("server.index.persist", "an index in %s is kept by %[1]s: leave persist out", i.Store)
	}
	if store.validate != nil {
		store.validate(c, cfg)
	}
}

func kindList(kinds []index.Kind) string {
	names := make([]string, len(kinds))
	for i, k := range kinds {
		names[i] = string(k)
	}
	return strings.Join(names, " and ")
}

func (a Artifacts) validate(c *checker, dbs []string) {
	c.oneOf("server.artifacts.backend", a.Backend, "filesystem", "sql", "inmemory")
	if a.Backend == "sql" {
		c.ref("server.artifacts.database", a.Database, dbs)
	}
	if a.MaxSizeMB < 0 {
		c.add("server.artifacts.max_size_mb", "must be positive")
	}
}

func (e Extraction) validate(c *checker, llms []string) {
	if e.LLM != "" {
		c.ref("server.extraction.llm", e.LLM, llms)
	}
	for name, n := range map[string]int{"tokens_per_hour": e.TokensPerHour, "tokens_per_day": e.TokensPerDay, "concurrency": e.Concurrency, "every_turns": e.EveryTurns} {
		if n < 0 {
			c.add("server.extraction."+name, "must be positive")
		}
	}
}

func (f Facts) validate(c *checker, dbs []string) {
	c.oneOf("server.facts.backend", f.Backend, "sql", "inmemory")
	if f.Backend == "sql" {
		c.ref("server.facts.database", f.Database, dbs)
	}
	if f.MaxScopeChars < 0 {
		c.add("server.facts.max_scope_chars", "must be positive")
	}
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
