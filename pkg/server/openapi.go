package server

import (
	"fmt"
	"maps"
	"math"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hectormem/hector/pkg/artifacts"
	"github.com/hectormem/hector/pkg/facts"
	"github.com/hectormem/hector/pkg/ident"
	"github.com/hectormem/hector/pkg/index"
	"github.com/hectormem/hector/pkg/session"
	"github.com/hectormem/hector/pkg/state"
)

var pathParam = regexp.MustCompile(`\{(\w+)(?:\.\.\.)?\}`)

// openAPI serves an OpenAPI 3 document made from the route table the
// router is built from, so the two cannot drift apart.
func (s *Server) openAPI(w http.ResponseWriter, r *http.Request) error {
	scheme := "http"
	if r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https" {
		scheme = "https"
	}
	writeJSON(w, http.StatusOK, s.openAPIDocument(scheme+"://"+r.Host))
	return nil
}

// openAPIDocument describes the API as served at baseURL.
func (s *Server) openAPIDocument(baseURL string) map[string]any {
	paths := map[string]any{}
	for _, rt := range s.routes {
		path := strings.ReplaceAll(rt.path, "...}", "}") // OpenAPI has no "rest of the path" parameters
		op := map[string]any{"summary": rt.summary, "operationId": rt.name}
		var params []any
		for _, m := range pathParam.FindAllStringSubmatch(rt.path, -1) {
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": pathParams[m[1]]})
		}
		for _, q := range rt.query {
			p := queryParams[q]
			params = append(params, map[string]any{"name": q, "in": "query", "required": p.required, "schema": p.schema})
		}
		if params != nil {
			op["parameters"] = params
		}
		if rt.request != "" {
			// Optional: a session made with nothing given, a rebuild of
			// everything, an empty artifact.
			optional := rt.request == "CreateSession" || rt.request == "RebuildRequest" || rt.request == "Content"
			c := content(rt.request)
			if rt.request == "Archive" { // as curl --data-binary sends it
				c["application/octet-stream"] = c["application/x-tar"]
			}
			op["requestBody"] = map[string]any{"required": !optional, "content": c}
		}
		responses := map[string]any{}
		ok := map[string]any{"description": http.StatusText(rt.status)}
		if rt.response != "" {
			ok["content"] = content(rt.response)
		}
		responses[statusKey(rt.status)] = ok
		codes := []int{400, 401, 403, 404, 409, 413, 429, 503}
		for _, code := range rt.also {
			if code < 400 {
				responses[statusKey(code)] = map[string]any{"description": http.StatusText(code), "content": ok["content"]}
			} else {
				codes = append(codes, code)
			}
		}
		if rt.request != "" && rt.request != "Content" && rt.request != "Archive" { // a JSON body
			codes = append(codes, 415)
		}
		for _, code := range codes {
			responses[statusKey(code)] = map[string]any{"description": http.StatusText(code), "content": content("Error")}
		}
		op["responses"] = responses
		if rt.scope == scopePublic {
			op["security"] = []any{}
		}
		item, _ := paths[path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[path] = item
		}
		item[strings.ToLower(rt.method)] = op
	}
	return map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{"title": "Hector", "version": "1", "description": "Memory for AI agents: sessions, state, artifacts, search and working memory.",
			"license": map[string]any{"name": "Apache-2.0", "url": "https://www.apache.org/licenses/LICENSE-2.0"}},
		"servers":  []any{map[string]any{"url": baseURL, "description": "this server"}},
		"paths":    paths,
		"security": []any{map[string]any{"bearer": []any{}}},
		"components": map[string]any{
			"securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer", "description": "An API key or a JWT"}},
			"schemas":         schemas,
		},
	}
}

func statusKey(code int) string { return strconv.Itoa(code) }

func content(schema string) map[string]any {
	mime := map[string]string{
		"Content": "*/*", // an artifact, of whatever type it was saved as
		"Archive": "application/x-tar",
		"Metrics": "text/plain",
	}[schema]
	if mime == "" {
		mime = "application/json"
	}
	return map[string]any{mime: map[string]any{"schema": map[string]string{"$ref": "#/components/schemas/" + schema}}}
}

// body is a request body's schema: the server refuses fields it does not
// know, and reads a null as a field left out.
func body(props map[string]any, required ...string) map[string]any {
	o := obj(props, required...)
	o["additionalProperties"] = false
	for name, p := range props {
		if slices.Contains(required, name) {
			continue
		}
		if p, ok := p.(map[string]any); ok && p["$ref"] == nil {
			props[name] = withNullable(p)
		} else {
			// OpenAPI 3.0 ignores nullable beside a bare $ref, and wants a
			// type beside it: every schema a body refers to is an object.
			props[name] = map[string]any{"type": "object", "allOf": []any{p}, "nullable": true}
		}
	}
	return o
}

// stateDelta is a state change whose keys all carry prefix (a rule on
// names, which OpenAPI 3.0 can only say in words); a null value deletes a
// key.
func stateDelta(prefix string) map[string]any {
	return map[string]any{"type": "object", "additionalProperties": true, "description": fmt.Sprintf(
		"Every key starts with %q, has no control character and at most %d characters; a null value deletes the key", prefix, state.MaxKeyChars)}
}

func withNullable(p map[string]any) map[string]any {
	c := maps.Clone(p)
	c["nullable"] = true
	return c
}

func obj(props map[string]any, required ...string) map[string]any {
	o := map[string]any{"type": "object", "properties": props}
	if required != nil {
		o["required"] = required
	}
	return o
}

// pathParams are the path parameters' schemas, as the stores check them.
var pathParams = map[string]any{
	"app": id, "user": id, "id": id,
	"agent": map[string]any{"type": "string", "minLength": 1},
	// An artifact's name: flat (no slash, no ".."), "user:" first for the
	// user's own.
	"name": map[string]any{"type": "string", "minLength": 1, "maxLength": artifacts.MaxNameChars, "pattern": `^[^/\\\x00-\x1f\x7f]+$`,
		"description": `Flat: no slash, no "..". A name starting "user:" is the user's, shared by their sessions.`},
	"key": factKey,
}

type queryParam struct {
	schema   any
	required bool
}

// queryParams are the query parameters' schemas, as the handlers read them.
var queryParams = map[string]queryParam{
	"page_size":  {schema: map[string]any{"type": "integer", "minimum": 0, "maximum": session.MaxPageSize, "description": "0 for the default"}},
	"page_token": {schema: queryText},
	"order":      {schema: map[string]any{"type": "string", "enum": []string{"created", "updated"}}},
	"recent":     {schema: count},
	"after":      {schema: dateTime},
	"before_seq": {schema: count},
	"version":    {schema: count},
	"prefix":     {schema: queryText},
	"category":   {schema: queryText},
	"as_of":      {schema: instant},
	"key":        {schema: factKey, required: true},
	"stream":     {schema: map[string]any{"type": "boolean"}},
}

var (
	// id is an app name, user ID or session ID, as ident.Check takes it.
	id = map[string]any{"type": "string", "minLength": 1, "maxLength": ident.MaxChars, "pattern": ident.Pattern}
	// factKey is a fact's key: levels separated by single slashes.
	factKey = map[string]any{"type": "string", "minLength": 1, "maxLength": facts.DefaultPolicy().MaxKeyChars,
		"pattern": `^[^/\x00-\x1f\x7f]+(/[^/\x00-\x1f\x7f]+)*$`}
	// count is a whole number, 0 for the default.
	count = map[string]any{"type": "integer", "minimum": 0, "maximum": math.MaxInt64}
	// queryText is a query parameter's text: no NUL, which no name holds.
	queryText = map[string]any{"type": "string", "pattern": `^[^\x00]*$`}
	// instant is an RFC 3339 timestamp or a date (its midnight UTC).
	instant = map[string]any{"type": "string", "anyOf": []any{map[string]any{"format": "date-time"}, map[string]any{"format": "date"}}}
	// optionalInstant is an instant in a body, where "" leaves it out.
	optionalInstant = map[string]any{"type": "string", "anyOf": []any{map[string]any{"format": "date-time"}, map[string]any{"format": "date"}, map[string]any{"maxLength": 0}}}
)

var (
	str      = map[string]any{"type": "string"}
	nonEmpty = map[string]any{"type": "string", "minLength": 1}
	boolean  = map[string]any{"type": "boolean"}
	dateTime = map[string]any{"type": "string", "format": "date-time"}
	// optionalID is an ID the server makes up when it is left out or empty.
	optionalID = map[string]any{"type": "string", "maxLength": ident.MaxChars, "anyOf": []any{map[string]any{"maxLength": 0}, map[string]any{"pattern": ident.Pattern}}}
	title      = map[string]any{"type": "string", "maxLength": session.MaxTitleChars, "pattern": `^[^\x00-\x1f\x7f-\x9f]*$`}
	num        = map[string]any{"type": "integer"}
	anyObj     = map[string]any{"type": "object", "additionalProperties": true}
	ref        = func(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	array      = func(items any) map[string]any { return map[string]any{"type": "array", "items": items} }
)

var schemas = map[string]any{
	"Error":         obj(map[string]any{"error": obj(map[string]any{"code": str, "message": str}, "code", "message")}, "error"),
	"Status":        obj(map[string]any{"status": str}),
	"Metrics":       str,
	"OpenAPI":       anyObj,
	"Content":       map[string]any{"type": "string", "format": "binary"},
	"Archive":       map[string]any{"type": "string", "format": "binary", "description": "A tar archive: user.jsonl, the sessions' files, each store's part (user_state/, artifacts/, facts/), end.json"},
	"AppState":      body(map[string]any{"state": stateDelta("app:")}, "state"),
	"UserState":     body(map[string]any{"state": stateDelta("user:")}, "state"),
	"State":         obj(map[string]any{"state": anyObj}, "state"),
	"CreateSession": body(map[string]any{"session_id": optionalID, "title": title, "state": anyObj}),
	"Message":       body(map[string]any{"role": str, "parts": array(anyObj)}, "role", "parts"),
	"Event": obj(map[string]any{"id": str, "invocation_id": str, "author": str, "branch": str, "message": ref("Message"),
		"actions": anyObj, "timestamp": str, "metadata": anyObj, "seq": num, "cursor": num}),
	"AppendEvent": body(map[string]any{"id": optionalID, "invocation_id": str, "author": optionalID, "branch": str, "message": ref("Message"),
		"actions": anyObj, "timestamp": dateTime, "metadata": anyObj, "expected_seq": count,
		"partial": map[string]any{"type": "boolean", "description": "Streaming chunks (true) are never stored: false or left out"}}),
	"Session": obj(map[string]any{"id": str, "title": str, "app_name": str, "user_id": str, "state": anyObj, "events": array(ref("Event")),
		"last_seq": num, "last_update_time": str}),
	"SessionList":  obj(map[string]any{"sessions": array(ref("Session")), "next_page_token": str}),
	"Artifact":     obj(map[string]any{"name": str, "version": num, "mime_type": str, "size": num, "sha256": str, "created_at": str, "metadata": anyObj}),
	"ArtifactList": obj(map[string]any{"artifacts": array(ref("Artifact"))}),
	"SearchRequest": body(map[string]any{"query": nonEmpty, "limit": count, "session_id": str, "author": str,
		"role": map[string]any{"type": "string", "enum": index.Roles}, "after": optionalInstant, "before": optionalInstant, "recency_half_life": str, "as_of": optionalInstant,
		"full_content": boolean}, "query"),
	"SearchResponse": obj(map[string]any{"results": array(obj(map[string]any{"session_id": str, "event_id": str, "content": str, "author": str,
		"role": str, "seq": num, "timestamp": str, "score": map[string]any{"type": "number", "description": "How well the result answers the query. A hybrid index's is between 0 and 1: (1 − w) × the share of the query's terms the result holds (times the square root of its keyword score against the best) + w × its similarity in meaning above the model's floor, w the model's share (0.65 for e5-small, the default; 0.4 for the others), and a result under the floor scores a millionth of its similarity, after every other; a keyword or vector index's is its own search's score. Then a short question among the candidates gives half its score to its reply, the event right after it (which may then pass 1); an assistant's turn keeps 0.85 of its score; a result by anyone but the one author the query names, or said more than a week from every time it names, counts half; and each result gains 0.3 of its session's second-best score."},
		"signals": map[string]any{"type": "object", "description": "With a hybrid index, what each search (keyword, vector) made of the result: its rank there and its own score (BM25, or cosine similarity). \"recency\": the weight of its age, when the search prefers recent results. \"reply\": the rank of the short question just before it and the score that question gave it.",
			"additionalProperties": obj(map[string]any{"rank": num, "score": map[string]any{"type": "number"}}, "rank", "score")},
		"metadata": anyObj, "truncated": map[string]any{"type": "boolean"}})), "facts": array(ref("FactMatch"))}),
	"ContextRequest": body(map[string]any{"working_memory": anyObj, "agent": str}),
	"Context":        obj(map[string]any{"strategy": str, "events": array(ref("Event")), "total_events": num}),
	"RebuildRequest": body(map[string]any{"app": optionalID, "user": optionalID}),
	// A fact's key and value are trimmed, and invisible characters removed
	// from the value, before their lengths are checked.
	"StoreFact": body(map[string]any{"key": map[string]any{"type": "string", "minLength": 1, "description": fmt.Sprintf(
		"Levels between single slashes (deploy/tool), at most %d characters once trimmed", facts.DefaultPolicy().MaxKeyChars)},
		"value": map[string]any{"type": "string", "minLength": 1, "description": fmt.Sprintf(
			"At most %d characters once control characters are removed", facts.DefaultPolicy().MaxValueChars)},
		"category": map[string]any{"type": "string", "pattern": `^([a-z0-9][a-z0-9_.-]{0,63})?$`, "not": map[string]any{"enum": facts.DefaultPolicy().ReservedCategories},
			"description": "Lowercase letters, digits, _ . -; empty for user_facts"},
		"tags": array(map[string]any{"type": "string", "pattern": `^[a-z0-9][a-z0-9_.-]{0,63}$`}),
		"ttl_seconds": map[string]any{"type": "integer", "description": "0 for the default (90 days); else at least an hour, at most a year",
			"anyOf": []any{map[string]any{"enum": []int{0}}, map[string]any{"minimum": 3600, "maximum": 365 * 24 * 3600}}},
		"merge_duplicates": map[string]any{"type": "boolean", "description": "When another key already holds this fact in other words: " +
			"true renews that fact and answers it (decision duplicate); false, the default, answers 409 duplicate naming the key"}}, "key", "value"),
	"Fact":           obj(factProperties()),
	"FactMatch":      obj(withScore(factProperties())),
	"ExtractRequest": body(map[string]any{"after_seq": count, "to_seq": count}),
	"ExtractResult": obj(map[string]any{"calls": num, "tokens": num, "events": num, "proposed": num, "added": num, "updated": num,
		"unchanged": num, "duplicates": num, "invalidated": num, "dropped": num, "refused": array(str), "facts": array(ref("Fact"))}),
	"ExtractionStatus": obj(map[string]any{"enabled": map[string]any{"type": "boolean"}, "model": str,
		"budget": obj(map[string]any{"per_hour": num, "per_day": num}),
		"apps":   array(obj(map[string]any{"app": str, "hour_tokens": num, "day_tokens": num})), "totals": anyObj}),
	"ProtectedResource": obj(map[string]any{"resource": str, "authorization_servers": array(str), "bearer_methods_supported": array(str), "resource_name": str}),
	"AgentList": obj(map[string]any{"agents": array(obj(map[string]any{"name": str, "app": str, "llm": str, "model": str, "working_memory": str,
		"tools": array(str), "mcp_servers": array(str), "run": str}))}),
	"UpdateSession": body(map[string]any{"title": title}, "title"),
	"ImportSummary": obj(map[string]any{"from": obj(map[string]any{"app_name": str, "user_id": str}), "sessions": num, "events": num,
		"user_state_keys": num, "fact_versions": num, "artifact_versions": num}),
	"ErasureReceipt": obj(map[string]any{"app_name": str, "user_id": str, "by": str, "state": str, "resumed": num, "started": str, "finished": str,
		"stores": array(obj(map[string]any{"store": str, "removed": num, "left": num})), "verified": map[string]any{"type": "boolean"}, "pending": str}),
	"FactHistory":    obj(map[string]any{"versions": array(ref("Fact"))}),
	"InvalidateFact": body(map[string]any{"key": factKey}, "key"),
	"FactList":       obj(map[string]any{"facts": array(ref("Fact"))}),
	"ForgetFacts":    body(map[string]any{"selector": map[string]any{"type": "string", "pattern": `^(all|key:.+|category:.+)$`}}, "selector"),
	"Forgotten":      obj(map[string]any{"removed": num}),
	"FactSummary":    obj(map[string]any{"total": num, "categories": anyObj, "recent_keys": array(str)}),
	"GatewaySearch": body(map[string]any{"user_id": id, "user_key": nonEmpty, "conversation_id": str, "query": nonEmpty, "scope": array(str),
		"top_k": count, "app_id": str, "project_id": str}, "user_id", "user_key", "query", "scope"),
	"GatewayResults": obj(map[string]any{"results": array(obj(map[string]any{"id": str, "session_id": str, "text": str,
		"score": map[string]any{"type": "number"}, "source_scope": str, "resource_uri": str}))}),
	"GatewayAdd": body(map[string]any{"user_id": id, "user_key": nonEmpty, "session_id": id, "app_id": str, "project_id": str,
		"messages": array(body(map[string]any{"sender_id": str, "role": str, "content": str,
			"timestamp": map[string]any{"type": "integer", "minimum": 1, "maximum": 253402300799999, "description": "Unix epoch milliseconds; a turn's do not decrease"}}))},
		"user_id", "user_key", "session_id", "messages"),
	"GatewayAdded":   obj(map[string]any{"added": num}),
	"GatewayFlush":   body(map[string]any{"user_id": id, "user_key": nonEmpty, "session_id": id, "app_id": str, "project_id": str}, "user_id", "user_key", "session_id"),
	"GatewayFlushed": obj(map[string]any{"flushed": map[string]any{"type": "boolean"}}),
	"RunRequest":     body(map[string]any{"user_id": id, "session_id": optionalID, "message": nonEmpty, "app": str}, "user_id", "message"),
	"RunResult": obj(map[string]any{"app_name": str, "user_id": str, "session_id": str, "reply": str,
		"events": array(ref("Event")), "metadata": anyObj}),
	"Whoami": obj(map[string]any{"name": str, "role": str, "app": str, "user": str, "approver": map[string]any{"type": "boolean"}}),
	"UserList": obj(map[string]any{"users": array(obj(map[string]any{"app": str, "user": str, "sessions": num, "facts": num,
		"last_update_time": map[string]any{"type": "string", "format": "date-time", "description": "Their sessions' last update; absent with none"}},
		"app", "user", "sessions", "facts")), "next_page_token": str}),
	"IndexStatus": obj(map[string]any{"type": str, "store": str, "lag": num, "vector_lag": num, "error": str, "rebuild": ref("RebuildStatus"),
		"healing": map[string]any{"type": "string", "description": "Why the index in process is being built again from the sessions (its file damaged, another store's, or older than an erasure) and how far along; absent when it is not. Searches answer 503 index_rebuilding meanwhile"}}),
	"RebuildStatus": obj(map[string]any{"state": str, "app": str, "user": str, "error": str, "started": str, "finished": str,
		"progress": obj(map[string]any{"sessions": num, "events": num, "indexed": num, "cursor": num, "head": num, "done": map[string]any{"type": "boolean"}},
			"sessions", "events", "indexed", "cursor", "head", "done")}),
}

// factProperties are a fact's fields.
func factProperties() map[string]any {
	return map[string]any{"id": str, "key": str, "value": str, "category": str, "tags": array(str), "created_at": str, "updated_at": str,
		"expires_at": str, "valid_from": str, "valid_to": str, "supersedes": str, "superseded_by": str,
		"source": obj(map[string]any{"kind": str, "by": str, "agent": str, "session_id": str, "event_ids": array(str), "model": str,
			"claimed": obj(map[string]any{"kind": str, "by": str, "agent": str, "session_id": str, "event_ids": array(str), "model": str})}),
		"decision": map[string]any{"type": "string", "enum": []string{"added", "updated", "unchanged", "duplicate"}}}
}

func withScore(props map[string]any) map[string]any {
	props["score"] = map[string]any{"type": "number"}
	return props
}
