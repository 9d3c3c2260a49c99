package app

import (
	"testing"

	"github.com/hectormem/hector/pkg/config"
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
