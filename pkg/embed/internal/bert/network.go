package bert

import (
	"fmt"
	"math"
	"sync"

	"github.com/hectormem/hector/pkg/embed/internal/mat"
)

// Shape is a BERT's: its width, layers, attention heads and feed-forward
// width. Every model here has BERT's uncased vocabulary and 512 positions.
type Shape struct {
	Width, Layers, Heads, Intermediate int
	// Activations: the bits the int8 products quantise the dense layers'
	// inputs to (16 unless given; see mat.Activations).
	Activations mat.Activations
}

const (
	vocabSize    = 30522
	maxPositions = 512
	layerNormEps = 1e-12
)

// network is the encoder: pieces' and positions' embeddings, the
// transformer layers, and the mean of the last layer's outputs over a
// text's pieces, scaled to length 1, as sentence-transformers pools it.
type network struct {
	Shape
	buffers   sync.Pool // of *buffers
	headWidth int
	words     tensor     // [vocab, width], kept as the file holds it: a row is read per piece
	positions mat.Matrix // [positions, width]
	tokenType []float32
	embNorm   norm
	layers    []layer
}

type norm struct{ scale, bias []float32 }

// layer is one transformer layer; its dense layers are y = x·Wᵀ + b.
type layer struct {
	// qkv is the queries', keys' and values' projections side by side
	// ([3·width, width]): one product reads the layer's input once and is
	// large enough to share between cores even for a short query.
	qkv, out      dense
	attNorm       norm
	ffnIn, ffnOut dense
	ffnNorm       norm
}

type dense = *mat.Linear

// apply normalises x's rows in place.
func (n norm) apply(x mat.Matrix) { mat.LayerNorm(x, x, n.scale, n.bias, layerNormEps) }

func newNetwork(t map[string]tensor, shape Shape) (*network, error) {
	var err error
	tensorOf := func(name string, dims ...int) tensor {
		tt, ok := t[name]
		switch {
		case err != nil:
		case !ok:
			err = fmt.Errorf("the model has no tensor %s", name)
		case fmt.Sprint(tt.shape) != fmt.Sprint(dims):
			err = fmt.Errorf("tensor %s has shape %v, want %v", name, tt.shape, dims)
		default:
			return tt
		}
		return tensor{}
	}
	take := func(name string, dims ...int) mat.Matrix {
		tt := tensorOf(name, dims...)
		if err != nil {
			return mat.Matrix{}
		}
		m := mat.Matrix{Rows: 1, Cols: dims[len(dims)-1], Data: tt.floats()}
		if len(dims) == 2 {
			m.Rows = dims[0]
		}
		return m
	}
	width := shape.Width
	vec := func(name string, n int) []float32 { return take(name, n).Data }
	lin := func(name string, out, in int) dense {
		return mat.NewInt8(take(name+".weight", out, in), vec(name+".bias", out), shape.Activations)
	}
	// The queries' weights and bias carry attention's 1/sqrt(headWidth), so
	// the scores need no scaling of their own.
	attention := func(prefix string, norm float32) dense {
		w, bias := mat.New(3*width, width), make([]float32, 0, 3*width)
		for i, part := range []string{"query", "key", "value"} {
			m, b := take(prefix+part+".weight", width, width), vec(prefix+part+".bias", width)
			if err != nil {
				return nil
			}
			scale := float32(1)
			if i == 0 {
				scale = norm
			}
			for j, v := range m.Data {
				w.Data[i*width*width+j] = v * scale
			}
			for _, v := range b {
				bias = append(bias, v*scale)
			}
		}
		return mat.NewInt8(w, bias, shape.Activations)
	}
	nrm := func(name string) norm { return norm{vec(name+".weight", width), vec(name+".bias", width)} }
	headWidth := width / shape.Heads
	n := &network{Shape: shape, headWidth: headWidth,
		positions: take("embeddings.position_embeddings.weight", maxPositions, width),
		embNorm:   nrm("embeddings.LayerNorm"), layers: make([]layer, shape.Layers)}
	n.buffers.New = func() any { return new(buffers) }
	n.tokenType = take("embeddings.token_type_embeddings.weight", 2, width).Row(0)
	n.words = tensorOf("embeddings.word_embeddings.weight", vocabSize, width)
	for i := range n.layers {
		p := fmt.Sprintf("encoder.layer.%d.", i)
		n.layers[i] = layer{
			qkv:     attention(p+"attention.self.", float32(1/math.Sqrt(float64(headWidth)))),
			out:     lin(p+"attention.output.dense", width, width),
			attNorm: nrm(p + "attention.output.LayerNorm"),
			ffnIn:   lin(p+"intermediate.dense", shape.Intermediate, width), ffnOut: lin(p+"output.dense", width, shape.Intermediate),
			ffnNorm: nrm(p + "output.LayerNorm"),
		}
	}
	if _, extra := t[fmt.Sprintf("encoder.layer.%d.output.dense.weight", shape.Layers)]; extra && err == nil {
		err = fmt.Errorf("the model has more than %d layers", shape.Layers)
	}
	return n, err
}

// span is one text's rows.
type span struct{ from, to int }

// encode returns the unit vectors of texts given as their pieces. The
// dense layers run on every text's rows at once, which reads the weights
// once for the batch; attention stays within a text.
func (n *network) encode(texts [][]int) [][]float32 {
	var spans []span
	rows := 0
	for _, ids := range texts {
		spans = append(spans, span{rows, rows + len(ids)})
		rows += len(ids)
	}
	width := n.Width
	b := n.buffers.Get().(*buffers)
	defer n.buffers.Put(b)
	x := mat.Reuse(&b.x, rows, width)
	word := make([]float32, width)
	for i, ids := range texts {
		for t, id := range ids {
			n.words.row(id, word)
			row, pos := x.Row(spans[i].from+t), n.positions.Row(t)
			for j := range row {
				row[j] = word[j] + pos[j] + n.tokenType[j]
			}
		}
	}
	n.embNorm.apply(x)
	for i := range n.layers {
		n.layers[i].apply(x, spans, n, b)
	}
	vectors := make([][]float32, len(texts))
	for i, sp := range spans {
		mean := make([]float64, width)
		for r := sp.from; r < sp.to; r++ {
			for j, v := range x.Row(r) {
				mean[j] += float64(v)
			}
		}
		var sum float64
		for _, v := range mean {
			sum += v * v
		}
		scale := 1 / math.Max(math.Sqrt(sum), 1e-12) // the mean's length: the count cancels
		vec := make([]float32, width)
		for j, v := range mean {
			vec[j] = float32(v * scale)
		}
		vectors[i] = vec
	}
	return vectors
}

// apply runs one layer of n over the texts' rows, x, in place.
func (l *layer) apply(x mat.Matrix, spans []span, n *network, b *buffers) {
	headWidth, width := n.headWidth, n.Width
	qkv := mat.Reuse(&b.qkv, x.Rows, 3*width)
	l.qkv.Into(x, qkv)
	ctx := mat.Reuse(&b.ctx, x.Rows, width)
	if len(b.heads) < n.Heads {
		b.heads = make([]headBuffers, n.Heads)
	}
	for _, sp := range spans {
		// A text's heads go to the other core too when its helper is
		// awake: on the caller alone they were 0.45 ms of a 15-piece
		// question's 6.1 ms on two cores.
		mat.Share(n.Heads, func(from, to int) {
			for h := from; h < to; h++ {
				b.heads[h].attend(qkv, ctx, sp, h*headWidth, headWidth)
			}
		})
	}
	h := mat.Reuse(&b.h, x.Rows, width)
	l.out.Into(ctx, h)
	h.Add(x)
	l.attNorm.apply(h)
	hidden := mat.Reuse(&b.hidden, x.Rows, n.Intermediate)
	l.ffnIn.Into(h, hidden)
	mat.GELU(hidden.Data)
	l.ffnOut.Into(hidden, x) // x is read no more
	x.Add(h)
	l.ffnNorm.apply(x)
}

// buffers are one encoding's matrices, kept for the next (see mat.Into
// and mat.Pair).
type buffers struct {
	x, qkv, ctx, h, hidden []float32
	heads                  []headBuffers
}

// headBuffers are one attention head's.
type headBuffers struct {
	qh, kh, vh, scores, attended []float32
	pair                         mat.Pair
}

// attend writes the head whose columns start at c, over the text's rows
// sp, into ctx: its queries', keys' and values' columns of qkv (each
// width apart), the softmax of the queries times the keys, times the
// values.
func (hb *headBuffers) attend(qkv, ctx mat.Matrix, sp span, c, headWidth int) {
	rows, width := sp.to-sp.from, ctx.Cols
	qh, kh, vh := mat.Reuse(&hb.qh, rows, headWidth), mat.Reuse(&hb.kh, rows, headWidth), mat.Reuse(&hb.vh, rows, headWidth)
	scores, attended := mat.Reuse(&hb.scores, rows, rows), mat.Reuse(&hb.attended, rows, headWidth)
	for t := range rows {
		row := qkv.Row(sp.from + t)
		copy(qh.Row(t), row[c:c+headWidth])
		copy(kh.Row(t), row[width+c:width+c+headWidth])
		copy(vh.Row(t), row[2*width+c:2*width+c+headWidth])
	}
	hb.pair.ProductT(qh, kh, scores)
	for t := range rows {
		mat.Softmax(scores.Row(t))
	}
	hb.pair.Product(scores, vh, attended)
	for t := range rows {
		copy(ctx.Row(sp.from + t)[c:c+headWidth], attended.Row(t))
	}
}
