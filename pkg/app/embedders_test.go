package app

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/hectormem/hector/pkg/config"
	"github.com/hectormem/hector/pkg/embed"
)

// A built-in embedder needs no entry of its own: naming it is enough, and
// "builtin" names the sentence encoder.
func TestBuiltinEmbedderByName(t *testing.T) {
	for name, want := range map[string]string{"builtin": "use-lite/v1/512", "use-lite": "use-lite/v1/512", "glove": "glove-6b/v1/100"} {
		c, err := config.Parse("t.yaml", []byte("server:\n  index: {type: hybrid, embedder: "+name+"}\n"), config.Overrides{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if e := c.Embedders[name]; e.Type != "builtin" {
			t.Errorf("%s: embedders = %+v, want a built-in one", name, c.Embedders)
		}
		e, err := BuildEmbedder(c.Embedders[name])
		if err != nil || e.Fingerprint() != want {
			t.Errorf("%s: built %v, %v; want %s", name, e, err, want)
		}
	}
	c, err := config.Parse("t.yaml", []byte("embedders:\n  mine: {type: builtin}\nserver:\n  index: {type: vector}\n"), config.Overrides{})
	if err != nil || c.Embedders["mine"].Model != "use-lite" || c.Server.Index.Embedder != "mine" {
		t.Errorf("a builtin entry without a model: %+v, %v", c, err)
	}
}

// The configuration's dimensions of the built-in models are theirs.
func TestBuiltinDimensionsAreTheModels(t *testing.T) {
	for model, want := range config.BuiltinDimensions {
		e, err := BuildEmbedder(config.Embedder{Type: "builtin", Model: model})
		if err != nil || e.Dimensions() != want {
			t.Errorf("%s: %v, %v; the configuration says %d dimensions", model, e, err, want)
		}
	}
}

// An API's model gets the marks its entry gives its queries and documents.
func TestAPIEmbedderTakesItsMarks(t *testing.T) {
	var inputs []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Input []string }
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		inputs = append(inputs, body.Input...)
		fmt.Fprint(w, `{"data":[{"index":0,"embedding":[1,0]}]}`)
	}))
	defer api.Close()
	c, err := config.Parse("t.yaml", []byte("embedders:\n  api: {type: openai, base_url: "+api.URL+"/v1, model: m, dimensions: 2, "+
		"query_prefix: \"query: \", document_prefix: \"passage: \"}\n"), config.Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	e, err := BuildEmbedder(c.Embedders["api"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Embed(t.Context(), []string{"a turn"}); err != nil {
		t.Fatal(err)
	}
	if _, err := embed.Queries(t.Context(), e, []string{"a question"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"passage: a turn", "query: a question"}; !slices.Equal(inputs, want) {
		t.Errorf("the API was sent %q, want %q", inputs, want)
	}
}
