package config

// builtinModels are the embedders shipped inside the binary that
// server.index.embedder may name without an embedders entry, and the model
// each name means: "builtin" is the one Hector recommends.
var builtinModels = map[string]string{"builtin": "use-lite", "glove": "glove", "use-lite": "use-lite", "minilm": "minilm", "e5-small": "e5-small"}

// BuiltinDimensions are the built-in models' vector lengths: written out
// so that the configuration needs none of the models (pkg/app checks them
// against the models).
var BuiltinDimensions = map[string]int{"glove": 100, "use-lite": 512, "minilm": 384, "e5-small": 384}

// fast reports whether the embedder takes microseconds per text, so that an
// append may as well wait for it: hash and the static word vectors, not a
// transformer nor an API (nor an embedder that is not defined).
func (e Embedder) fast() bool {
	return e.Type == "hash" || e.Type == "builtin" && e.Model == "glove"
}
