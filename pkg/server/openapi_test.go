package server

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// The OpenAPI document is valid OpenAPI 3 (kin-openapi's validator) and
// keeps the rules generated clients need (Redocly's recommended set):
// unique operationIds that read as method names, servers, a license, a
// schema for every body, an error response on every operation.
func TestOpenAPIDocumentLintsClean(t *testing.T) {
	s := newTestServer(t, nil)
	w := do(t, s, "GET", "/openapi.json", "", nil)
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(w.Body.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if err := doc.Validate(t.Context()); err != nil {
		t.Fatalf("the document is not valid OpenAPI: %v", err)
	}
	if len(doc.Servers) == 0 || !strings.HasPrefix(doc.Servers[0].URL, "http://") {
		t.Errorf("servers: %+v", doc.Servers)
	}
	if doc.Info.License == nil || doc.Info.License.Name == "" || doc.Info.License.URL == "" {
		t.Error("info.license is missing")
	}
	methodName := regexp.MustCompile(`^[a-z][a-zA-Z]*$`)
	seen := map[string]string{}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			where := method + " " + path
			if !methodName.MatchString(op.OperationID) {
				t.Errorf("%s: operationId %q does not read as a method name", where, op.OperationID)
			}
			if other, dup := seen[op.OperationID]; dup {
				t.Errorf("%s and %s share operationId %q", where, other, op.OperationID)
			}
			seen[op.OperationID] = where
			if op.Summary == "" {
				t.Errorf("%s has no summary", where)
			}
			if op.RequestBody != nil {
				for mime, c := range op.RequestBody.Value.Content {
					if c.Schema == nil {
						t.Errorf("%s: request body %s has no schema", where, mime)
					}
				}
			}
			has4xx := false
			for code, resp := range op.Responses.Map() {
				has4xx = has4xx || strings.HasPrefix(code, "4")
				for mime, c := range resp.Value.Content {
					if c.Schema == nil {
						t.Errorf("%s: response %s %s has no schema", where, code, mime)
					}
				}
			}
			if !has4xx {
				t.Errorf("%s documents no error response", where)
			}
		}
	}
	if len(seen) != len(s.routes) {
		t.Errorf("the document has %d operations, the router %d routes", len(seen), len(s.routes))
	}
	raw, _ := json.Marshal(doc)
	if strings.Contains(string(raw), "shared/") {
		t.Error("the document points outside the repository")
	}
}
