package server

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/hectormem/hector/pkg/index"
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
			params = append(params, map[string]any{"name": m[1], "in": "path", "required": true, "schema": map[string]string{"type": "string"}})
		}
		for _, q := range rt.query {
			params = append(params, map[string]any{"name": q, "in": "query", "required": false, "schema": map[string]string{"type": "string"}})
		}
		if params != nil {
			op["parameters"] = params
		}
		if rt.request != "" {
			op["requestBody"] = map[string]any{"required": rt.request != "CreateSession" && rt.request != "RebuildRequest",
				"content": content(rt.request)}
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
		if rt.request != "" && rt.request != "Content" { // a JSON body
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
	mime := "application/json"
	if schema == "Content" {
		mime = "application/octet-stream"
	} else if schema == "Metrics" {
		mime = "text/plain"
	}
	return map[string]any{mime: map[string]any{"schema": map[string]string{"$ref": "#/components/schemas/" + schema}}}
}

func obj(props map[string]any, required ...string) map[string]any {
	o := map[string]any{"type": "object", "properties": props}
	if required != nil {
		o["required"] = required
	}
	return o
}

var (
	str    = map[string]any{"type": "string"}
	num    = map[string]any{"type": "integer"}
	anyObj = map[string]any{"type": "object", "additionalProperties": true}
	ref    = func(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }
	array  = func(items any) map[string]any { return map[string]any{"type": "array", "items": items} }
)

var schemas = map[string]any{
	"Error":         obj(map[string]any{"error": obj(map[string]any{"code": str, "message": str}, "code", "message")}, "error"),
	"Status":        obj(map[string]any{"status": str}),
	"Metrics":       str,
	"OpenAPI":       anyObj,
	"Content":       map[string]any{"type": "string", "format": "binary"},
	"State":         obj(map[string]any{"state": anyObj}, "state"),
	"CreateSession": obj(map[string]any{"session_id": str, "title": str, "state": anyObj}),
	"Message":       obj(map[string]any{"role": str, "parts": array(anyObj)}, "role", "parts"),
	"Event": obj(map[string]any{"id": str, "invocation_id": str, "author": str, "branch": str, "message": ref("Message"),
		"actions": anyObj, "timestamp": str, "metadata": anyObj, "seq": num, "cursor": num}),
	"AppendEvent": obj(map[string]any{"id": str, "invocation_id": str, "author": str, "branch": str, "message": ref("Message"),
		"actions": anyObj, "timestamp": str, "metadata": anyObj, "partial": map[string]any{"type": "boolean"}, "expected_seq": num}),
	"Session": obj(map[string]any{"id": str, "title": str, "app_name": str, "user_id": str, "state": anyObj, "events": array(ref("Event")),
		"last_seq": num, "last_update_time": str}),
	"SessionList":  obj(map[string]any{"sessions": array(ref("Session")), "next_page_token": str}),
	"Artifact":     obj(map[string]any{"name": str, "version": num, "mime_type": str, "size": num, "sha256": str, "created_at": str, "metadata": anyObj}),
	"ArtifactList": obj(map[string]any{"artifacts": array(ref("Artifact"))}),
	"SearchRequest": obj(map[string]any{"query": str, "limit": num, "session_id": str, "author": str,
		"role": map[string]any{"type": "string", "enum": index.Roles}, "after": str, "before": str, "recency_half_life": str, "as_of": str,
		"full_content": map[string]any{"type": "boolean"}}, "query"),
	"SearchResponse": obj(map[string]any{"results": array(obj(map[string]any{"session_id": str, "event_id": str, "content": str, "author": str,
		"role": str, "seq": num, "timestamp": str, "score": map[string]any{"type": "number", "description": "How well the result answers the query. A hybrid index's is between 0 and 1: 0.7 × the share of the query's terms the result holds (times the square root of its keyword score against the best) + 0.3 × its similarity in meaning above the model's floor; a keyword or vector index's is its own search's score."},
		"signals": map[string]any{"type": "object", "description": "With a hybrid index, what each search (keyword, vector) made of the result: its rank there and its own score (BM25, or cosine similarity).",
			"additionalProperties": obj(map[string]any{"rank": num, "score": map[string]any{"type": "number"}}, "rank", "score")},
		"metadata": anyObj, "truncated": map[string]any{"type": "boolean"}})), "facts": array(ref("FactMatch"))}),
	"ContextRequest": obj(map[string]any{"working_memory": anyObj, "agent": str}),
	"Context":        obj(map[string]any{"strategy": str, "events": array(ref("Event")), "total_events": num}),
	"RebuildRequest": obj(map[string]any{"app": str, "user": str}),
	"StoreFact":      obj(map[string]any{"key": str, "value": str, "category": str, "tags": array(str), "ttl_seconds": num}, "key", "value"),
	"Fact":           obj(factProperties()),
	"FactMatch":      obj(withScore(factProperties())),
	"ExtractRequest": obj(map[string]any{"after_seq": num, "to_seq": num}),
	"ExtractResult": obj(map[string]any{"calls": num, "tokens": num, "events": num, "proposed": num, "added": num, "updated": num,
		"unchanged": num, "duplicates": num, "invalidated": num, "dropped": num, "refused": array(str), "facts": array(ref("Fact"))}),
	"ExtractionStatus": obj(map[string]any{"enabled": map[string]any{"type": "boolean"}, "model": str,
		"budget": obj(map[string]any{"per_hour": num, "per_day": num}),
		"apps":   array(obj(map[string]any{"app": str, "hour_tokens": num, "day_tokens": num})), "totals": anyObj}),
	"ProtectedResource": obj(map[string]any{"resource": str, "authorization_servers": array(str), "bearer_methods_supported": array(str), "resource_name": str}),
	"AgentList": obj(map[string]any{"agents": array(obj(map[string]any{"name": str, "app": str, "llm": str, "model": str, "working_memory": str,
		"tools": array(str), "mcp_servers": array(str), "run": str}))}),
	"UpdateSession": obj(map[string]any{"title": str}, "title"),
	"ImportSummary": obj(map[string]any{"from": obj(map[string]any{"app_name": str, "user_id": str}), "sessions": num, "events": num,
		"user_state_keys": num, "fact_versions": num, "artifact_versions": num}),
	"ErasureReceipt": obj(map[string]any{"app_name": str, "user_id": str, "by": str, "state": str, "resumed": num, "started": str, "finished": str,
		"stores": array(obj(map[string]any{"store": str, "removed": num, "left": num})), "verified": map[string]any{"type": "boolean"}, "pending": str}),
	"FactHistory":    obj(map[string]any{"versions": array(ref("Fact"))}),
	"InvalidateFact": obj(map[string]any{"key": str}, "key"),
	"FactList":       obj(map[string]any{"facts": array(ref("Fact"))}),
	"ForgetFacts":    obj(map[string]any{"selector": str}, "selector"),
	"Forgotten":      obj(map[string]any{"removed": num}),
	"FactSummary":    obj(map[string]any{"total": num, "categories": anyObj, "recent_keys": array(str)}),
	"GatewaySearch": obj(map[string]any{"user_id": str, "user_key": str, "conversation_id": str, "query": str, "scope": array(str),
		"top_k": num, "app_id": str, "project_id": str}, "user_id", "user_key", "query", "scope"),
	"GatewayResults": obj(map[string]any{"results": array(obj(map[string]any{"id": str, "session_id": str, "text": str,
		"score": map[string]any{"type": "number"}, "source_scope": str, "resource_uri": str}))}),
	"GatewayAdd": obj(map[string]any{"user_id": str, "user_key": str, "session_id": str, "app_id": str, "project_id": str,
		"messages": array(obj(map[string]any{"sender_id": str, "role": str, "timestamp": num, "content": str}))}, "user_id", "user_key", "session_id", "messages"),
	"GatewayAdded":   obj(map[string]any{"added": num}),
	"GatewayFlush":   obj(map[string]any{"user_id": str, "user_key": str, "session_id": str, "app_id": str, "project_id": str}, "user_id", "user_key", "session_id"),
	"GatewayFlushed": obj(map[string]any{"flushed": map[string]any{"type": "boolean"}}),
	"RunRequest":     obj(map[string]any{"user_id": str, "session_id": str, "message": str, "app": str}, "user_id", "message"),
	"RunResult": obj(map[string]any{"app_name": str, "user_id": str, "session_id": str, "reply": str,
		"events": array(ref("Event")), "metadata": anyObj}),
	"Whoami":        obj(map[string]any{"name": str, "role": str, "app": str, "user": str, "approver": map[string]any{"type": "boolean"}}),
	"UserList":      obj(map[string]any{"users": array(obj(map[string]any{"app": str, "user": str, "sessions": num, "last_update_time": str})), "next_page_token": str}),
	"IndexStatus":   obj(map[string]any{"type": str, "store": str, "lag": num, "vector_lag": num, "error": str, "rebuild": ref("RebuildStatus")}),
	"RebuildStatus": obj(map[string]any{"state": str, "app": str, "user": str, "progress": anyObj, "error": str, "started": str, "finished": str}),
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
