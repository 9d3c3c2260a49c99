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
	// Databases are the SQL databases the stores use, by name.
	Databases map[string]Database `yaml:"databases"`
	// Embedders turn text into vectors for the index and the facts, by name.
	Embedders map[string]Embedder `yaml:"embedders"`
	// LLMs are chat models the agents and extraction call, by name.
	LLMs map[string]LLM `yaml:"llms"`
	// Agents are the agents the server hosts, by name.
	Agents map[string]Agent `yaml:"agents"`
	// Server is what hector serve (and the other commands) run.
	Server Server `yaml:"server"`
}

// Database is a SQL database: driver sqlite (dsn: a file path) or postgres.
type Database struct {
	// Driver: sqlite, postgres or mysql.
	Driver string `yaml:"driver"`
	// DSN: a file path for sqlite; a connection string for postgres
	// ("host=… user=… dbname=…" or a postgres:// URL) and mysql
	// ("user:pass@tcp(host:3306)/db").
	DSN string `yaml:"dsn"`
	// MaxConnections bounds the connections this process opens (default
	// sqldb.DefaultMaxConnections for postgres and mysql, no bound for sqlite).
	MaxConnections int `yaml:"max_connections"`
}

// Embedder turns text into vectors: type builtin (shipped inside the
// binary, offline: model use-lite, the default; minilm or e5-small,
// retrieval-trained encoders; or glove), hash (offline, lexical), openai or
// ollama.
// server.index.embedder may name a built-in model (builtin, use-lite,
// minilm, e5-small, glove) without an entry here.
type Embedder struct {
	// Type: builtin, hash, openai or ollama.
	Type string `yaml:"type"`
	// BaseURL is the API's address, for openai (up to /v1) and ollama.
	BaseURL string `yaml:"base_url"`
	// Model is the built-in model (use-lite, minilm, e5-small, glove) or the API's.
	Model string `yaml:"model"`
	// Dimensions is the vectors' length: required for hash and the APIs'
	// models, checked against a built-in model's own.
	Dimensions int `yaml:"dimensions"`
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string `yaml:"api_key_env"`
	// BatchSize is how many texts go in one request to an API (default 64).
	BatchSize int `yaml:"batch_size"`
	// QueryPrefix goes before each search query sent to an API, for a model
	// trained with its queries marked (e5: "query: ", nomic-embed-text:
	// "search_query: ", bge: its instruction); built-in models mark their own.
	QueryPrefix string `yaml:"query_prefix"`
	// DocumentPrefix goes before each text searched sent to an API (e5:
	// "passage: ", nomic-embed-text: "search_document: ").
	DocumentPrefix string `yaml:"document_prefix"`
}

// LLM is an OpenAI-compatible chat-completions endpoint.
type LLM struct {
	// BaseURL is the endpoint, up to /v1 (https://api.openai.com/v1, Ollama's http://localhost:11434/v1).
	BaseURL string `yaml:"base_url"`
	// Model is the model's name at that endpoint.
	Model string `yaml:"model"`
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string `yaml:"api_key_env"`
}

// Agent is an agent the server hosts.
type Agent struct {
	// App is the app whose users' sessions the agent keeps (default: the agent's name).
	App string `yaml:"app"`
	// LLM names the llms entry the agent's turns call.
	LLM string `yaml:"llm"`
	// Instruction is the agent's system instruction.
	Instruction string `yaml:"instruction"`
	// WorkingMemory is the strategy that trims what the model sees of a
	// session: all (the default), buffer_window, token_window or summary_buffer.
	WorkingMemory workingmemory.Config `yaml:"working_memory"`
	// Search gives the agent the search_memory tool.
	Search Search `yaml:"search"`
	// MaxSteps bounds model calls in one turn (default 8).
	MaxSteps int `yaml:"max_steps"`
	// ConcurrentRuns on one session: serialize (wait, the default) or reject (409).
	ConcurrentRuns string `yaml:"concurrent_runs"`
	// Summarizer writes summary_buffer's summaries: extractive (offline, the
	// default) or llm (the agent's model).
	Summarizer string `yaml:"summarizer"`
	// Facts gives the agent curated facts' tools.
	Facts AgentFacts `yaml:"facts"`
	// MemoryGateway, when set, is a remote memory searched before each run
	// and given each completed turn (best effort). Off by default.
	MemoryGateway *MemoryGateway `yaml:"memory_gateway"`
	// MCPServers lend the agent their tools.
	MCPServers []MCPServer `yaml:"mcp_servers"`
}

// MCPServer is an MCP server whose tools an agent may call: a command over
// stdio, or a Streamable HTTP url.
type MCPServer struct {
	// Name prefixes the server's tools' names.
	Name string `yaml:"name"`
	// Command starts a server over stdio: the program and its arguments.
	Command []string `yaml:"command"`
	// URL is a Streamable HTTP server's endpoint (instead of command).
	URL string `yaml:"url"`
	// HeadersEnv maps a header to the variable holding its value.
	HeadersEnv map[string]string `yaml:"headers_env"`
	// Cache keeps the tools' results for TTL (such as 5m), per app.
	Cache *ToolCache `yaml:"cache"`
}

// ToolCache configures a read-through cache of tool results.
type ToolCache struct {
	// TTL is how long a result is kept, a Go duration (5m, 1h).
	TTL string `yaml:"ttl"`
}

// TTLDuration is the parsed TTL (validation has checked it).
func (c ToolCache) TTLDuration() time.Duration {
	d, _ := time.ParseDuration(c.TTL)
	return d
}

// MemoryGateway is a remote Memory Gateway.
type MemoryGateway struct {
	// URL is the gateway's base URL.
	URL string `yaml:"url"`
	// UserKeyEnv names the variable holding the key the gateway knows users by.
	UserKeyEnv string `yaml:"user_key_env"`
	// AppID is passed to the gateway with every request.
	AppID string `yaml:"app_id"`
	// ProjectID is passed to the gateway with every request.
	ProjectID string `yaml:"project_id"`
	// Scope is what the gateway searches (default: current_chat, all_user_memory).
	Scope []string `yaml:"scope"`
	// TopK is how many memories a search asks for (0..100, default 8).
	TopK int `yaml:"top_k"`
	// TimeoutMS bounds each call, in milliseconds (default 5,000).
	TimeoutMS int `yaml:"timeout_ms"`
}

// AgentFacts gives an agent the memory_store, memory_recall and
// memory_forget tools over one scope of curated facts.
type AgentFacts struct {
	// Enabled gives the agent the tools.
	Enabled bool `yaml:"enabled"`
	// Scope is whose facts: app, user (the default) or session.
	Scope string `yaml:"scope"`
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
	// Enabled gives the agent the tool.
	Enabled bool `yaml:"enabled"`
	// MaxResults is how many results a search returns at most (default 5).
	MaxResults int `yaml:"max_results"`
}

// Server is the server section.
type Server struct {
	// Address is where the server listens, host:port. An address other
	// than loopback needs auth configured.
	Address string `yaml:"address"`
	// AllowedHosts are host names (without a port) that a server listening
	// on loopback answers to besides localhost and loopback addresses: a
	// name in /etc/hosts, or the one a local reverse proxy passes on. Any
	// other is refused, so that a web page whose name an attacker points at
	// 127.0.0.1 (DNS rebinding) cannot reach the API.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// DataDir holds everything the process writes locally (--data-dir,
	// else $HECTOR_DATA_DIR, else ./data).
	DataDir string `yaml:"data_dir"`
	// Sessions is the session service: the source of truth.
	Sessions Sessions `yaml:"sessions"`
	// Index is the search index derived from the sessions.
	Index Index `yaml:"index"`
	// Artifacts is where artifacts' versions are kept.
	Artifacts Artifacts `yaml:"artifacts"`
	// Auth is off when it lists no credential (loopback only).
	Auth Auth `yaml:"auth"`
	// Limits protect the server.
	Limits Limits `yaml:"limits"`
	// Facts is the curated facts' store.
	Facts Facts `yaml:"facts"`
	// Extraction learns facts from conversations with a model.
	Extraction Extraction `yaml:"extraction"`
	// MCP configures the MCP server (/mcp and hector mcp).
	MCP MCP `yaml:"mcp"`
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
	// Backend: sql (the sessions' database) or inmemory.
	Backend string `yaml:"backend"`
	// Database names the databases entry (default: the sessions').
	Database string `yaml:"database"`
	// MaxScopeChars bounds the characters of all values in one scope (default 4,000).
	MaxScopeChars int `yaml:"max_scope_chars"`
	// ReservedCategories may not be written (default: system).
	ReservedCategories []string `yaml:"reserved_categories"`
}

// Extraction configures learning facts from conversations with a model
// (POST …/sessions/{id}/memories:extract); off without an llm.
type Extraction struct {
	// LLM names the llms entry that reads the conversations.
	LLM string `yaml:"llm"`
	// TokensPerHour bounds each app's spending in an hour (default
	// DefaultExtractionTokensPerHour, 200,000).
	TokensPerHour int `yaml:"tokens_per_hour"`
	// TokensPerDay bounds it in a day (default 2,000,000).
	TokensPerDay int `yaml:"tokens_per_day"`
	// Concurrency is how many calls run at once (default 2).
	Concurrency int `yaml:"concurrency"`
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
	// Backend: sql or inmemory (nothing kept past the process).
	Backend string `yaml:"backend"`
	// Database names the databases entry (default: the only one; with
	// none, SQLite at data_dir/hector.db).
	Database string `yaml:"database"`
	// Cache keeps the events of this many recently read sessions in memory
	// (0: none). A cached read still asks the database for the session's
	// state and last event, so it is never stale.
	Cache int `yaml:"cache"`
}

// Index chooses the search index.
type Index struct {
	// Type: keyword, vector or hybrid (default: hybrid in process, words
	// and meaning; keyword in an external engine that holds words; vector
	// in pinecone).
	Type index.Kind `yaml:"type"`
	// Embedder names the embedders entry (or a built-in model: e5-small,
	// the one that finds the most; minilm; use-lite; glove) of a vector or
	// hybrid index (default: the only embedders entry, or e5-small when
	// there is none).
	Embedder string `yaml:"embedder"`
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
	// at most before an append waits for them (default 100,000); they may
	// lag less: what the embedder does in about 4 s at its measured rate.
	MaxVectorLag int `yaml:"max_vector_lag"`
	// Persist keeps an in-process index under the data directory (default
	// true): in index/<type>.db, an SQLite file read through the page
	// cache, so the index costs disk, not memory; chromem-go's collections,
	// which live in memory, in a snapshot. False holds it in memory and
	// builds it from the sessions at every start.
	Persist *bool `yaml:"persist"`
	// Qdrant, Weaviate, Postgres and Pinecone say where store's engine is.
	Qdrant   Qdrant   `yaml:"qdrant"`
	Weaviate Weaviate `yaml:"weaviate"`
	Postgres Postgres `yaml:"postgres"`
	Pinecone Pinecone `yaml:"pinecone"`
}

// Pinecone is a Pinecone index, for vector indexes.
type Pinecone struct {
	// Host is the index's data-plane host, https://…pinecone.io.
	Host string `yaml:"host"`
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string `yaml:"api_key_env"`
}

// Postgres is a keyword index in the sessions' PostgreSQL database.
type Postgres struct {
	// Table is the search table (default hector_search).
	Table string `yaml:"table"`
}

// Weaviate is a Weaviate server.
type Weaviate struct {
	// URL is its REST API, http(s)://host:port.
	URL string `yaml:"url"`
	// GRPCAddress is host:port; batch writes go over gRPC when set.
	GRPCAddress string `yaml:"grpc_address"`
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string `yaml:"api_key_env"`
	// Collection is the collection's name (default HectorMemory).
	Collection string `yaml:"collection"`
}

// Stems reports whether keyword search stems English words: unless
// stemming is turned off.
func (i Index) Stems() bool { return i.Stemming == nil || *i.Stemming }

// External reports whether the index lives in an engine outside the process.
func (i Index) External() bool { return indexStores[i.Store].external }

// Qdrant is a Qdrant server.
type Qdrant struct {
	// Host is the server's host name.
	Host string `yaml:"host"`
	// Port is its gRPC port (default 6334).
	Port int `yaml:"port"`
	// APIKeyEnv names the environment variable holding the API key.
	APIKeyEnv string `yaml:"api_key_env"`
	// TLS connects over TLS.
	TLS bool `yaml:"tls"`
	// Collection is the alias searches use (default hector_memory).
	Collection string `yaml:"collection"`
}

// Artifacts chooses the artifact store: filesystem, sql or inmemory.
type Artifacts struct {
	// Backend: filesystem, sql or inmemory.
	Backend string `yaml:"backend"`
	// Database names the databases entry of sql (default: the sessions').
	Database string `yaml:"database"`
	// Dir is filesystem's directory (default data_dir/artifacts).
	Dir string `yaml:"dir"`
	// MaxSizeMB bounds one version's size, in MiB.
	MaxSizeMB int `yaml:"max_size_mb"`
}

// Auth lists the credentials the server accepts.
type Auth struct {
	// APIKeys are the API keys the server accepts.
	APIKeys []APIKey `yaml:"api_keys"`
	// JWT accepts bearer tokens.
	JWT *JWT `yaml:"jwt"`
	// SelfErasure lets a user's credential erase its own user
	// (DELETE /v1/apps/{app}/users/{user}); otherwise only an app's or
	// the admin's may.
	SelfErasure bool `yaml:"self_erasure"`
}

// APIKey is a key and what it may reach: role admin (everything), app (any
// user of App) or user (App's User only).
type APIKey struct {
	// Name names the key in logs and receipts (never the key).
	Name string `yaml:"name"`
	// Key is the key itself, usually ${SOME_ENV_VAR}.
	Key string `yaml:"key"`
	// KeyEnv names the variable holding the key, instead of key.
	KeyEnv string `yaml:"key_env"`
	// Role: admin (everything), app (any user of app) or user (app's user only).
	Role string `yaml:"role"`
	// App is the app an app or user key reaches.
	App string `yaml:"app"`
	// User is the user a user key reaches.
	User string `yaml:"user"`
	// Approver marks a credential whose turns may write facts under write_policy: approvers.
	Approver bool `yaml:"approver"`
}

// JWT accepts bearer tokens signed with an HS256 secret or an RS256 key.
// The subject is the user; the app comes from the "app" claim or App.
type JWT struct {
	// HS256SecretEnv names the variable holding an HS256 secret.
	HS256SecretEnv string `yaml:"hs256_secret_env"`
	// RS256PublicKey is an RS256 public key, PEM.
	RS256PublicKey string `yaml:"rs256_public_key"`
	// Issuer, when set, must be the tokens' iss (an https:// URL), and is
	// named to MCP clients as the authorization server.
	Issuer string `yaml:"issuer"`
	// Audience, when set, must be among the tokens' aud.
	Audience string `yaml:"audience"`
	// App is the app of tokens with no app claim.
	App string `yaml:"app"`
}

// Limits protect the server.
type Limits struct {
	// MaxBodyMB bounds a request's body, in MiB (artifacts and imports
	// stream past it).
	MaxBodyMB int `yaml:"max_body_mb"`
	// RequestsPerSecond limits each credential's requests when auth is
	// on, and failed authentications per client address.
	RequestsPerSecond float64 `yaml:"requests_per_second"`
	// Burst is how many requests may come at once above that rate.
	Burst int `yaml:"burst"`
}
