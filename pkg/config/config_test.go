package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hectormem/hector/pkg/index"
)

func TestZeroConfig(t *testing.T) {
	t.Setenv("HECTOR_DATA_DIR", "")
	c, err := Parse("empty.yaml", nil, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Server
	if s.Address != "127.0.0.1:8080" || s.DataDir != "data" || s.Sessions.Backend != "sql" || s.Index.Type != "hybrid" || !*s.Index.Persist ||
		s.Index.Embedder != "e5-small" || s.Index.Vectors != "background" || !*s.Index.Stemming {
		t.Errorf("zero config = %+v", s)
	}
	if db := c.Databases[s.Sessions.Database]; db.Driver != "sqlite" || db.DSN != filepath.Join("data", "hector.db") {
		t.Errorf("zero config database = %+v", db)
	}
	t.Setenv("HECTOR_DATA_DIR", "/srv/hector")
	if c := Zero(Overrides{}); c.Server.DataDir != "/srv/hector" || c.Server.Artifacts.Dir != "/srv/hector/artifacts" {
		t.Errorf("HECTOR_DATA_DIR ignored: %+v", c.Server)
	}
}

func TestEnvExpansion(t *testing.T) {
	t.Setenv("HECTOR_TEST_PORT_ADDR", "0.0.0.0:9090")
	t.Setenv("HECTOR_TEST_RPS", "7.5")
	t.Setenv("HECTOR_TEST_KEY", "k-0123456789abcdef")
	c, err := Parse("t.yaml", []byte(`
server:
  address: ${HECTOR_TEST_PORT_ADDR}
  limits: {requests_per_second: "${HECTOR_TEST_RPS}"}
  auth:
    api_keys:
      - {key: "${HECTOR_TEST_KEY}", role: admin}
      - {key: "${HECTOR_TEST_UNSET:-fallback-key-0123456789}", role: admin}
`), Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if c.Server.Address != "0.0.0.0:9090" || c.Server.Limits.RequestsPerSecond != 7.5 ||
		c.Server.Auth.APIKeys[0].Key != "k-0123456789abcdef" || c.Server.Auth.APIKeys[1].Key != "fallback-key-0123456789" {
		t.Errorf("expanded = %+v", c.Server)
	}
	_, err = Parse("t.yaml", []byte("server:\n  address: ${HECTOR_TEST_SURELY_UNSET}\n"), Overrides{})
	if err == nil || !strings.Contains(err.Error(), "t.yaml:2") || !strings.Contains(err.Error(), "HECTOR_TEST_SURELY_UNSET is not set") {
		t.Errorf("unset variable: %v", err)
	}
	// A variable's value is a value, never YAML structure.
	t.Setenv("HECTOR_TEST_TRICK", "x\nrole: admin")
	c, err = Parse("t.yaml", []byte("agents:\n  a: {llm: l, instruction: \"${HECTOR_TEST_TRICK}\"}\nllms:\n  l: {base_url: http://x, model: m}\n"), Overrides{})
	if err != nil || c.Agents["a"].Instruction != "x\nrole: admin" {
		t.Errorf("value with YAML in it: %+v, %v", c.Agents["a"], err)
	}
}

// A file is checked whole: every mistake is reported at once, each at its
// line, secrets that are not set among them, and a value of the wrong
// type does not hide the rest.
func TestEveryMistakeIsReported(t *testing.T) {
	_, err := Parse("t.yaml", []byte(`databases:
  main: {driver: oracle, dsn: x}
embedders:
  e: {type: openai, base_url: http://e, model: m, dimensions: 8, api_key_env: HECTOR_TEST_UNSET_EMBED_KEY}
server:
  address: ${HECTOR_TEST_UNSET_ADDR}
  sessions: {backend: sql, database: main, cache: lots}
  index: {type: vector, store: chromem, embedder: missing}
  auth:
    api_keys:
      - {key: "${HECTOR_TEST_UNSET_API_KEY}", role: admin}
`), Overrides{})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{
		"t.yaml:2: databases.main.driver",
		"t.yaml:4: embedders.e.api_key_env: environment variable HECTOR_TEST_UNSET_EMBED_KEY is not set",
		"t.yaml:6: server.address: environment variable HECTOR_TEST_UNSET_ADDR is not set",
		"t.yaml:7: server.sessions.cache: a string (lots) where a whole number is wanted",
		"t.yaml:8: server.index.embedder",
		"t.yaml:11: server.auth.api_keys.0.key: environment variable HECTOR_TEST_UNSET_API_KEY is not set",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the errors lack %q:\n%v", want, err)
		}
	}
	// The key is empty only because its variable is not set: said once.
	if strings.Contains(err.Error(), "needs key") {
		t.Errorf("an unset variable's value is reported as a second mistake:\n%v", err)
	}
}

// With no type, an index in process finds words and meaning, with the
// built-in model that finds the most unless the file defines embedders; an
// engine's finds words, and a store of vectors only, meaning.
func TestTheIndexTypeAndEmbedderByDefault(t *testing.T) {
	t.Setenv("HECTOR_TEST_PINECONE_KEY_SET", "k")
	for _, tc := range []struct{ yaml, want string }{
		{"", "hybrid e5-small"},
		{"server:\n  index: {type: vector}\n", "vector e5-small"},
		{"server:\n  index: {store: chromem}\n", "hybrid e5-small"},
		{"server:\n  index: {type: hybrid, embedder: minilm}\n", "hybrid minilm"},
		{"embedders:\n  mine: {type: hash, dimensions: 16}\n", "hybrid mine"},
		{"server:\n  index: {type: keyword}\n", "keyword "},
		{"server:\n  index: {store: weaviate, weaviate: {url: \"http://127.0.0.1:1\"}}\n", "keyword "},
		{"server:\n  index: {store: pinecone, pinecone: {host: \"https://x.pinecone.io\", api_key_env: HECTOR_TEST_PINECONE_KEY_SET}}\n", "vector e5-small"},
	} {
		c, err := Parse("t.yaml", []byte(tc.yaml), Overrides{})
		if err != nil {
			t.Fatalf("%q: %v", tc.yaml, err)
		}
		if got := string(c.Server.Index.Type) + " " + c.Server.Index.Embedder; got != tc.want {
			t.Errorf("%q: index %q, want %q", tc.yaml, got, tc.want)
		}
	}
}

// Stemming is on unless the file turns it off: writing the index's type
// without it must not cost keyword search its stems.
func TestStemmingIsOnUnlessTurnedOff(t *testing.T) {
	for yaml, want := range map[string]bool{
		"":                                    true,
		"server:\n  index: {type: keyword}\n": true,
		"server:\n  index: {type: hybrid}\n":  true,
		"server:\n  index: {type: keyword, stemming: false}\n": false,
	} {
		c, err := Parse("t.yaml", []byte(yaml), Overrides{})
		if err != nil {
			t.Fatal(err)
		}
		if got := *c.Server.Index.Stemming; got != want {
			t.Errorf("%q: stemming %v, want %v", yaml, got, want)
		}
	}
}

// A hybrid index embeds in the background when its embedder is slow (the
// sentence encoder, an API), as its documents are written when it is fast;
// a file may say either, except background for an index that is not hybrid.
func TestVectorsInBackgroundWhenTheEmbedderIsSlow(t *testing.T) {
	api := "embedders:\n  api: {type: openai, base_url: http://127.0.0.1:1/v1, model: m, dimensions: 8}\n"
	for yaml, want := range map[string]string{
		"server:\n  index: {type: hybrid, embedder: use-lite}\n":                   "background",
		"server:\n  index: {type: hybrid, embedder: glove}\n":                      "inline",
		api + "server:\n  index: {type: hybrid, embedder: api}\n":                  "background",
		api + "server:\n  index: {type: vector, embedder: api}\n":                  "inline",
		"server:\n  index: {type: hybrid, embedder: use-lite, vectors: inline}\n":  "inline",
		"server:\n  index: {type: hybrid, embedder: glove, vectors: background}\n": "background",
		"server:\n  index: {type: keyword}\n":                                      "inline",
	} {
		c, err := Parse("t.yaml", []byte(yaml), Overrides{})
		if err != nil {
			t.Fatalf("%q: %v", yaml, err)
		}
		if got := c.Server.Index.Vectors; got != want || c.Server.Index.MaxVectorLag != index.DefaultVectorLag {
			t.Errorf("%q: vectors %q (lag %d), want %q", yaml, got, c.Server.Index.MaxVectorLag, want)
		}
	}
	for yaml, want := range map[string]string{
		"server:\n  index: {type: vector, embedder: use-lite, vectors: background}\n": "background vectors are for a hybrid index",
		"server:\n  index: {vectors: later}\n":                                        `"later" is not one of inline, background`,
		"server:\n  index: {max_vector_lag: -1}\n":                                    "server.index.max_vector_lag: -1 is negative",
	} {
		if _, err := Parse("t.yaml", []byte(yaml), Overrides{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want an error saying %q", yaml, err, want)
		}
	}
}

func TestErrorsNameKeyAndLine(t *testing.T) {
	for _, tc := range []struct {
		yaml string
		want []string
	}{
		{"server:\n  adress: x\n", []string{`t.yaml:2: server.adress: unknown key "adress": did you mean "address"?`}},
		{"agents:\n  bot:\n    llm: gpt5\n", []string{"t.yaml:3", "agents.bot.llm", `"gpt5"`, "none are defined"}},
		{"llms:\n  gpt: {base_url: http://x, model: m}\nagents:\n  bot:\n    llm: gpt\n    working_memory: {type: token_window, max_messages: 3}\n",
			[]string{"t.yaml:6", "agents.bot.working_memory.max_messages", "does not apply"}},
		{"server:\n  index: {type: fuzzy}\n", []string{"t.yaml:2", "server.index.type", `"fuzzy"`}},
		{"server:\n  sessions: {backend: sql, database: pg}\n", []string{"server.sessions.database", `"pg"`}},
		{"databases:\n  main: {driver: oracle, dsn: x}\n", []string{"t.yaml:2", "databases.main.driver"}},
		{"databases:\n  main: {driver: mysql, dsn: \"not a dsn\"}\n", []string{"databases.main.dsn", "MySQL DSN"}},
		{"databases:\n  main: {driver: postgres, dsn: x, max_connections: -1}\n", []string{"t.yaml:2", "databases.main.max_connections", "negative"}},
		{"databases:\n  main: {driver: sqlite, dsn: x.db, max_connections: 1}\n", []string{"t.yaml:2", "databases.main.max_connections", "too few for SQLite"}},
		{"embedders:\n  e: {type: openai, model: m}\n", []string{"embedders.e.base_url", "embedders.e.dimensions"}},
		{"server:\n  auth:\n    api_keys:\n      - {key: short, role: user, app: a}\n", []string{"server.auth.api_keys.0.key", "shorter than 16", "api_keys.0.user"}},
		{"server: [1, 2]\n", []string{"t.yaml:1: server: a list where a map is wanted"}},
		{"server:\n  sessions: {cache: -1}\n", []string{"server.sessions.cache"}},
		{"server:\n  index: {type: hybrid, store: pinecone}\n", []string{"server.index.store", "vector indexes only"}},
		{"server:\n  index: {type: vector, store: pinecone}\n", []string{"server.index.pinecone.host", "server.index.pinecone.api_key_env"}},
		{"llms:\n  m: {base_url: http://x, model: m}\nagents:\n  a:\n    llm: m\n    mcp_servers: [{name: t, command: [x], cache: {ttl: 0s}}, {name: t, url: http://u, command: [y]}]\n",
			[]string{"agents.a.mcp_servers.0.cache.ttl", "must expire", "agents.a.mcp_servers.1.name", "used twice", "agents.a.mcp_servers.1", "not both"}},
		{"server:\n  index: {type: hybrid, store: postgres}\n", []string{"server.index.store", "keyword indexes only"}},
		{"embedders:\n  e: {type: builtin, model: bert, dimensions: 7}\nserver:\n  index: {type: vector, embedder: e}\n", []string{"t.yaml:2: embedders.e.model", `"bert" is not one of e5-small, glove, minilm, use-lite`}},
		{"embedders:\n  e: {type: builtin, dimensions: 7}\n", []string{"embedders.e.dimensions", "512 dimensions"}},
		{"embedders:\n  e: {type: builtin, model: e5-small, query_prefix: \"query: \"}\n  h: {type: hash, document_prefix: x}\n",
			[]string{"t.yaml:2: embedders.e.query_prefix", "marks its inputs itself", "t.yaml:3: embedders.h.document_prefix"}},
		{"server:\n  index: {type: keyword, store: postgres}\n", []string{"server.index.store", "must be PostgreSQL"}},
		{"server:\n  index: {store: postgres, postgres: {table: Bad-Name}}\n", []string{"server.index.postgres.table", `"Bad-Name"`}},
		{"server:\n  index: {store: qdrant, persist: true}\n", []string{"server.index.qdrant.host", "server.index.persist"}},
		{"llms:\n  l: {base_url: http://x, model: m}\nagents:\n  a:\n    llm: l\n    memory_gateway: {url: http://gw, scope: [everything]}\n",
			[]string{"t.yaml:6", "agents.a.memory_gateway.user_key_env", "agents.a.memory_gateway.scope"}},
	} {
		_, err := Parse("t.yaml", []byte(tc.yaml), Overrides{})
		if err == nil {
			t.Errorf("%q: no error", tc.yaml)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q lacks %q", tc.yaml, err, w)
			}
		}
	}
}

func TestShippedConfigsAreValid(t *testing.T) {
	files, _ := filepath.Glob("../../configs/*.yaml")
	if len(files) < 2 {
		t.Fatalf("configs/ has %d example files, want the zero-config default and a production one", len(files))
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		// The production example reads secrets from the environment.
		for _, v := range []string{"HECTOR_POSTGRES_DSN", "OPENAI_API_KEY", "HECTOR_ADMIN_KEY", "HECTOR_QDRANT_HOST", "WEAVIATE_API_KEY", "QDRANT_API_KEY"} {
			t.Setenv(v, "test-value-0123456789")
		}
		t.Setenv("HECTOR_WEAVIATE_URL", "http://weaviate:8080")
		c, err := Parse(f, raw, Overrides{})
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		// The production shapes run as replicas: nothing of their own in the data dir.
		if strings.HasPrefix(filepath.Base(f), "production") && len(c.LocalState()) > 0 {
			t.Errorf("%s keeps %v in the data directory, so its replicas cannot be stateless", f, c.LocalState())
		}
	}
}

// A data directory from the command line wins over the file and the
// environment, and everything derived from it follows: defaults and paths
// the file writes under ${HECTOR_DATA_DIR}. Explicit paths stay.
func TestDataDirOverride(t *testing.T) {
	t.Setenv("HECTOR_DATA_DIR", "/from/env")
	c := Zero(Overrides{DataDir: "/flag"})
	if c.Server.DataDir != "/flag" || c.Databases[c.Server.Sessions.Database].DSN != "/flag/hector.db" || c.Server.Artifacts.Dir != "/flag/artifacts" || c.IndexFile() != "/flag/index/hybrid.db" {
		t.Errorf("zero config with --data-dir: %+v %+v", c.Server, c.Databases)
	}
	c, err := Parse("t.yaml", []byte(`
server:
  data_dir: /from/file
databases:
  main: {driver: sqlite, dsn: "${HECTOR_DATA_DIR:-./data}/main.db"}
`), Overrides{DataDir: "/flag"})
	if err != nil || c.Server.DataDir != "/flag" || c.Databases["main"].DSN != "/flag/main.db" || c.Server.Artifacts.Dir != "/flag/artifacts" {
		t.Errorf("file with --data-dir: %+v %+v, %v", c.Server, c.Databases, err)
	}
	c, err = Parse("t.yaml", []byte(`
server:
  artifacts: {backend: filesystem, dir: /srv/files}
databases:
  main: {driver: sqlite, dsn: /srv/db/hector.db}
`), Overrides{DataDir: "/flag"})
	if err != nil || c.Databases["main"].DSN != "/srv/db/hector.db" || c.Server.Artifacts.Dir != "/srv/files" {
		t.Errorf("explicit paths moved: %+v %+v, %v", c.Server, c.Databases, err)
	}
	c, _ = Parse("t.yaml", nil, Overrides{})
	if c.Server.DataDir != "/from/env" || c.Databases[c.Server.Sessions.Database].DSN != "/from/env/hector.db" {
		t.Errorf("$HECTOR_DATA_DIR without a flag: %+v", c.Server)
	}
}

// The start-up lines name every location, with no password.
func TestLocations(t *testing.T) {
	t.Setenv("HECTOR_FACTS_KEY", "")
	c, err := Parse("t.yaml", []byte(`
server:
  data_dir: /srv/hector
  artifacts: {backend: sql}
databases:
  main: {driver: postgres, dsn: "postgres://hector:s3cret-pw@db.internal:5433/memory"}
`), Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range c.Locations() {
		lines = append(lines, l.What+": "+l.Where)
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{"data directory: /srv/hector", "sessions: postgres hector@db.internal:5433/memory", "artifacts: postgres hector@db.internal:5433/memory",
		"facts key: /srv/hector/facts.key", "index: hybrid (embedder e5-small, vectors in the background), kept in /srv/hector/index/hybrid.db"} {
		if !strings.Contains(got, want) {
			t.Errorf("locations lack %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "s3cret-pw") {
		t.Errorf("locations show the password:\n%s", got)
	}
	my, err := Parse("t.yaml", []byte("server:\n  artifacts: {backend: sql}\ndatabases:\n  main: {driver: mysql, dsn: \"hector:s3cret-pw@tcp(db.internal:3306)/memory\"}\n"), Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(my.Locations()); !strings.Contains(got, "mysql hector@db.internal:3306/memory") || strings.Contains(got, "s3cret-pw") {
		t.Errorf("a MySQL database's location: %s", got)
	}
	t.Setenv("HECTOR_FACTS_KEY", strings.Repeat("ab", 32))
	if got := c.Locations(); !slices.Contains(got, Location{"facts key", "$HECTOR_FACTS_KEY"}) || strings.Contains(fmt.Sprint(got), "abab") {
		t.Errorf("with the key in the environment: %v", got)
	}
}

// An agent's facts write policy, when it names none, depends on the scope
// and on whether any credential may approve.
func TestWritePolicyDefaults(t *testing.T) {
	agents := "llms:\n  m: {base_url: http://x, model: m}\nagents:\n" +
		"  u: {llm: m, facts: {enabled: true}}\n" +
		"  s: {llm: m, facts: {enabled: true, scope: session}}\n" +
		"  a: {llm: m, facts: {enabled: true, scope: app}}\n" +
		"  explicit: {llm: m, facts: {enabled: true, scope: app, write_policy: auto}}\n"
	c, err := Parse("t.yaml", []byte(agents), Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"u": "auto", "s": "auto", "a": "off", "explicit": "auto"} {
		if got := c.Agents[name].Facts.WritePolicy; got != want {
			t.Errorf("agent %s: write_policy %q, want %q", name, got, want)
		}
	}
	t.Setenv("HECTOR_TEST_APPROVER_KEY", "approver-key-0123456789")
	c, err = Parse("t.yaml", []byte("server:\n  auth:\n    api_keys:\n      - {name: lead, key_env: HECTOR_TEST_APPROVER_KEY, role: user, app: x, user: y, approver: true}\n"+agents), Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"u": "approvers", "s": "approvers", "a": "approvers", "explicit": "auto"} {
		if got := c.Agents[name].Facts.WritePolicy; got != want {
			t.Errorf("with an approver key, agent %s: write_policy %q, want %q", name, got, want)
		}
	}
}

// Extraction names one of the llms, with budgets that are not negative.
func TestExtractionConfig(t *testing.T) {
	good := "llms:\n  small: {base_url: http://localhost:1/v1, model: m}\nserver:\n  extraction: {llm: small, tokens_per_hour: 5000}\n"
	c, err := Parse("t.yaml", []byte(good), Overrides{})
	if err != nil || c.Server.Extraction.LLM != "small" || c.Server.Extraction.TokensPerHour != 5000 {
		t.Fatalf("%+v, %v", c.Server.Extraction, err)
	}
	for yaml, want := range map[string]string{
		"server:\n  extraction: {llm: big}\n": "server.extraction.llm",
		"llms:\n  small: {base_url: http://localhost:1/v1, model: m}\nserver:\n  extraction: {llm: small, tokens_per_day: -1}\n": "server.extraction.tokens_per_day: must be positive",
	} {
		if _, err := Parse("t.yaml", []byte(yaml), Overrides{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v; want an error saying %q", yaml, err, want)
		}
	}
}

// Every mistake in one format (file:line: key: message), in the file's
// order, none only a consequence of another, near misses named (finding
// 11 of issue 71).
func TestMistakesAreSaidOnceInTheFilesOrder(t *testing.T) {
	raw := `server:
  index:
    type: hybird
    vectors: background
  sessions:
    backend: sql
    database: mian
  dataa_dir: x
databases:
  main: {driver: sqlite, dsn: x.db}
`
	_, err := Parse("t.yaml", []byte(raw), Overrides{})
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		`t.yaml:3: server.index.type: "hybird" is not one of keyword, vector, hybrid: did you mean "hybrid"?`,
		`t.yaml:7: server.sessions.database: refers to "mian", which is not defined (defined: main): did you mean "main"?`,
		`t.yaml:8: server.dataa_dir: unknown key "dataa_dir": did you mean "data_dir"?`,
	}
	if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, want) {
		t.Errorf("the mistakes said:\n%s\nwant:\n%s", err, strings.Join(want, "\n"))
	}
}
