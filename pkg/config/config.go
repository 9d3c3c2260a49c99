// Package config reads Hector's YAML configuration: named databases,
// embedders, LLMs and agents, and the server that hosts them. Values may
// use ${ENV_VAR} (or ${ENV_VAR:-default}); unknown keys, dangling
// references and invalid values are errors that name the key and its line.
package config

import (
	"time"

	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/workingmemory"
)

// Config is a whole configuration file.
type Config struct {
	Databases map[string]Database `yaml:"databases"`
	Embedders map[string]Embedder `yaml:"embedders"`
	LLMs      map[string]LLM      `yaml:"llms"`
	Agents    map[string]Agent    `yaml:"agents"`
	Server    Server              `yaml:"server"`
}

// Database is a SQL database: driver sqlite (dsn: a file path) or postgres.
type Database struct {
	Driver string `yaml:"driver"`
	DSN    string `yaml:"dsn"`
	// MaxConnections bounds the connections this process opens (default
	// sqldb.DefaultMaxConnections for postgres and mysql, no bound for sqlite).
	MaxConnections int `yaml:"max_connections"`
}

// Embedder turns text into vectors: type builtin (shipped inside the
// binary, offline: model use-lite, the default, minilm, a retrieval-trained
// encoder, or glove), hash (offline, lexical), openai or ollama.
// server.index.embedder may name a built-in model (builtin, use-lite,
// minilm, glove) without an entry here.
type Embedder struct {
	Type       string `yaml:"type"`
	BaseURL    string `yaml:"base_url"`
	Model      string `yaml:"model"`
	Dimensions int    `yaml:"dimensions"`
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string `yaml:"api_key_env"`
	BatchSize int    `yaml:"batch_size"`
}

// LLM is an OpenAI-compatible chat-completions endpoint.
type LLM struct {
	BaseURL   string `yaml:"base_url"`
	Model     string `yaml:"model"`
	APIKeyEnv string `yaml:"api_key_env"`
}

// Agent is an agent the server hosts.
type Agent struct {
	App           string               `yaml:"app"` // default: the agent's name
	LLM           string               `yaml:"llm"`
	Instruction   string               `yaml:"instruction"`
	WorkingMemory workingmemory.Config `yaml:"working_memory"`
	Search        Search               `yaml:"search"`
	// MaxSteps bounds model calls in one turn (default 8).
	MaxSteps int `yaml:"max_steps"`
	// ConcurrentRuns on one session: serialize (wait, the default) or reject (409).
	ConcurrentRuns string `yaml:"concurrent_runs"`
	// Summarizer writes summary_buffer's summaries: extractive (offline, the
	// default) or llm (the agent's model).
	Summarizer string     `yaml:"summarizer"`
	Facts      AgentFacts `yaml:"facts"`
	// MemoryGateway, when set, is a remote memory searched before each run
	// and given each completed turn (best effort). Off by default.
	MemoryGateway *MemoryGateway `yaml:"memory_gateway"`
	// MCPServers lend the agent their tools.
	MCPServers []MCPServer `yaml:"mcp_servers"`
}

// MCPServer is an MCP server whose tools an agent may call: a command over
// stdio, or a Streamable HTTP url.
type MCPServer struct {
	Name    string   `yaml:"name"`
	Command []string `yaml:"command"`
	URL     string   `yaml:"url"`
	// HeadersEnv maps a header to the variable holding its value.
	HeadersEnv map[string]string `yaml:"headers_env"`
	// Cache keeps the tools' results for TTL (such as 5m), per app.
	Cache *ToolCache `yaml:"cache"`
}

// ToolCache configures a read-through cache of tool results.
type ToolCache struct {
	TTL string `yaml:"ttl"`
}

// TTLDuration is the parsed TTL (validation has checked it).
func (c ToolCache) TTLDuration() time.Duration {
	d, _ := time.ParseDuration(c.TTL)
	return d
}

// MemoryGateway is a remote Memory Gateway.
type MemoryGateway struct {
	URL        string   `yaml:"url"`
	UserKeyEnv string   `yaml:"user_key_env"` // the variable holding the key the gateway knows users by
	AppID      string   `yaml:"app_id"`
	ProjectID  string   `yaml:"project_id"`
	Scope      []string `yaml:"scope"` // default: current_chat, all_user_memory
	TopK       int      `yaml:"top_k"` // default 8
	TimeoutMS  int      `yaml:"timeout_ms"`
}

// AgentFacts gives an agent the memory_store, memory_recall and
// memory_forget tools over one scope of curated facts.
type AgentFacts struct {
	Enabled bool   `yaml:"enabled"`
	Scope   string `yaml:"scope"` // app, user (default) or session
	// WritePolicy: auto (the agent may store and forget), approvers (only
	// turns started by an approver credential may) or off (read only).
	// Default: approvers when a credential is marked approver; else auto
	// for user and session scope, off for app scope.
	WritePolicy string `yaml:"write_policy"`
	// Inject puts the most recent facts in the prompt, labelled as reference data.
	Inject bool `yaml:"inject"`
	// Extract learns facts from the agent's conversations in the
	// background, with server.extraction's model, a few turns at a time.
	Extract bool `yaml:"extract"`
}

// Search configures an agent's search_memory tool.
type Search struct {
	Enabled    bool `yaml:"enabled"`
	MaxResults int  `yaml:"max_results"`
}

// Server is the server section.
type Server struct {
	Address string `yaml:"address"`
	// AllowedHosts are host names (without a port) that a server listening
	// on loopback answers to besides localhost and loopback addresses: a
	// name in /etc/hosts, or the one a local reverse proxy passes on. Any
	// other is refused, so that a web page whose name an attacker points at
	// 127.0.0.1 (DNS rebinding) cannot reach the API.
	AllowedHosts []string   `yaml:"allowed_hosts"`
	DataDir      string     `yaml:"data_dir"`
	Sessions     Sessions   `yaml:"sessions"`
	Index        Index      `yaml:"index"`
	Artifacts    Artifacts  `yaml:"artifacts"`
	Auth         Auth       `yaml:"auth"`
	Limits       Limits     `yaml:"limits"`
	Facts        Facts      `yaml:"facts"`
	Extraction   Extraction `yaml:"extraction"`
	MCP          MCP        `yaml:"mcp"`
}

// MCP configures the MCP server (/mcp and hector mcp).
type MCP struct {
	// WritePolicy for facts: auto (MCP clients may store and forget, the
	// default), approvers (only with an approver credential) or off.
	WritePolicy string `yaml:"write_policy"`
}

// Facts configures the curated-facts store. Its values are encrypted with
// $HECTOR_FACTS_KEY (64 hex characters), or a key file the server creates
// in the data directory.
type Facts struct {
	Backend            string   `yaml:"backend"`  // sql (the sessions' database) or inmemory
	Database           string   `yaml:"database"` // default: the sessions'
	MaxScopeChars      int      `yaml:"max_scope_chars"`
	ReservedCategories []string `yaml:"reserved_categories"`
}

// Extraction configures learning facts from conversations with a model
// (POST …/sessions/{id}/memories:extract); off without an llm.
type Extraction struct {
	LLM string `yaml:"llm"` // an llms entry
	// TokensPerHour and TokensPerDay bound each app's spending (defaults
	// DefaultExtractionTokensPerHour and …PerDay).
	TokensPerHour int `yaml:"tokens_per_hour"`
	TokensPerDay  int `yaml:"tokens_per_day"`
	Concurrency   int `yaml:"concurrency"` // calls at once (default 2)
	// EveryTurns is how many of an agent's turns the background worker
	// reads at once (default 4); a session quiet for two minutes is read
	// sooner.
	EveryTurns int `yaml:"every_turns"`
}

// The default extraction budget per app.
const (
	DefaultExtractionTokensPerHour = 200_000
	DefaultExtractionTokensPerDay  = 2_000_000
)

// Sessions chooses the session backend: inmemory, or sql on a named database.
type Sessions struct {
	Backend  string `yaml:"backend"`
	Database string `yaml:"database"`
	// Cache keeps the events of this many recently read sessions in memory
	// (0: none). A cached read still asks the database for the session's
	// state and last event, so it is never stale.
	Cache int `yaml:"cache"`
}

// Index chooses the search index.
type Index struct {
	Type     index.Kind `yaml:"type"`     // keyword, vector or hybrid
	Embedder string     `yaml:"embedder"` // for vector and hybrid
	// Store holds the index: in process (memory, the default; chromem for
	// a vector or hybrid index's vectors in chromem-go collections, exact
	// too and slower), or in an external engine every replica shares
	// (weaviate or qdrant, for every type; postgres, the sessions'
	// database, for keyword; pinecone for vector).
	Store string `yaml:"store"`
	// Stemming reduces English words to their stems for keyword search,
	// so "running" finds "runs" (default true; false turns it off).
	Stemming *bool `yaml:"stemming"`
	// Vectors says when a hybrid index embeds its documents: "inline", as
	// they are written, or "background", after, in the process that follows
	// the change feed, so that an append never waits on a slow embedder: a
	// document is found by its words at once and by its meaning shortly
	// after (default: background for the sentence encoder and embedding
	// APIs, inline for the static word vectors and hash, which take
	// microseconds).
	Vectors string `yaml:"vectors"`
	// MaxVectorLag is how many changes background vectors may lag behind
	// before an append waits for them (default 100,000).
	MaxVectorLag int `yaml:"max_vector_lag"`
	// Persist keeps an in-process index in a snapshot under the data
	// directory (default true).
	Persist  *bool    `yaml:"persist"`
	Qdrant   Qdrant   `yaml:"qdrant"`
	Weaviate Weaviate `yaml:"weaviate"`
	Postgres Postgres `yaml:"postgres"`
	Pinecone Pinecone `yaml:"pinecone"`
}

// Pinecone is a Pinecone index, for vector indexes.
type Pinecone struct {
	Host      string `yaml:"host"` // the index's data-plane host, https://…pinecone.io
	APIKeyEnv string `yaml:"api_key_env"`
}

// Postgres is a keyword index in the sessions' PostgreSQL database.
type Postgres struct {
	Table string `yaml:"table"` // default hector_search
}

// Weaviate is a Weaviate server.
type Weaviate struct {
	URL         string `yaml:"url"`          // its REST API, http(s)://host:port
	GRPCAddress string `yaml:"grpc_address"` // host:port; batch writes go over gRPC when set
	APIKeyEnv   string `yaml:"api_key_env"`
	Collection  string `yaml:"collection"` // default HectorMemory
}

// Stems reports whether keyword search stems English words: unless
// stemming is turned off.
func (i Index) Stems() bool { return i.Stemming == nil || *i.Stemming }

// External reports whether the index lives in an engine outside the process.
func (i Index) External() bool { return indexStores[i.Store].external }

// Qdrant is a Qdrant server.
type Qdrant struct {
	Host       string `yaml:"host"`
	Port       int    `yaml:"port"`
	APIKeyEnv  string `yaml:"api_key_env"`
	TLS        bool   `yaml:"tls"`
	Collection string `yaml:"collection"`
}

// Artifacts chooses the artifact store: filesystem, sql or inmemory.
type Artifacts struct {
	Backend   string `yaml:"backend"`
	Database  string `yaml:"database"`
	Dir       string `yaml:"dir"`
	MaxSizeMB int    `yaml:"max_size_mb"`
}

// Auth lists the credentials the server accepts.
type Auth struct {
	APIKeys []APIKey `yaml:"api_keys"`
	JWT     *JWT     `yaml:"jwt"`
	// SelfErasure lets a user's credential erase its own user
	// (DELETE /v1/apps/{app}/users/{user}); otherwise only an app's or
	// the admin's may.
	SelfErasure bool `yaml:"self_erasure"`
}

// APIKey is a key and what it may reach: role admin (everything), app (any
// user of App) or user (App's User only).
type APIKey struct {
	Name string `yaml:"name"`
	// Key is the key itself, usually ${SOME_ENV_VAR}; or KeyEnv names the variable.
	Key    string `yaml:"key"`
	KeyEnv string `yaml:"key_env"`
	Role   string `yaml:"role"`
	App    string `yaml:"app"`
	User   string `yaml:"user"`
	// Approver marks a credential whose turns may write facts under write_policy: approvers.
	Approver bool `yaml:"approver"`
}

// JWT accepts bearer tokens signed with an HS256 secret or an RS256 key.
// The subject is the user; the app comes from the "app" claim or App.
type JWT struct {
	HS256SecretEnv string `yaml:"hs256_secret_env"`
	RS256PublicKey string `yaml:"rs256_public_key"` // PEM
	Issuer         string `yaml:"issuer"`
	Audience       string `yaml:"audience"`
	App            string `yaml:"app"`
}

// Limits protect the server.
type Limits struct {
	MaxBodyMB         int     `yaml:"max_body_mb"`
	RequestsPerSecond float64 `yaml:"requests_per_second"`
	Burst             int     `yaml:"burst"`
}
