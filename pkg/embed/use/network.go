package use

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"

	"github.com/hectormem/hector/pkg/embed/internal/mat"
)

// MaxTokens is how many pieces of a text the model reads: the rest is
// cut off, as the reference implementation does.
const MaxTokens = 128

// network is the encoder: a two-layer transformer over the pieces'
// embeddings and sinusoid positions, its outputs averaged, then a tanh
// layer, then scaled to length 1.
type network struct {
	embeddings    mat.Matrix // [pieces, 256]
	invTimescales []float32  // 128: positions are sin and cos of position × these
	layers        [2]layer
	tanh          *mat.Linear // 512 → 512
}

type layer struct {
	norm1Scale, norm1Bias []float32
	qkv                   *mat.Linear // d → 3d: queries, keys, values
	out                   *mat.Linear // d → 512
	residual              *mat.Linear // d → 512 when d differs from 512 (the first layer)
	norm2Scale, norm2Bias []float32
	ffn1                  *mat.Linear // 512 → 1536
	ffn2                  *mat.Linear // 1536 → 512
	heads                 int
	scale                 float32 // of the queries: 1/sqrt(head width)
}

const heads = 4

func newNetwork(t []Tensor) (*network, error) {
	var err error
	i := 0
	// take is the next tensor, which must hold shape's values.
	take := func(shape ...int) mat.Matrix {
		size := 1
		for _, d := range shape {
			size *= d
		}
		m := mat.Matrix{Cols: shape[len(shape)-1], Data: t[i].Data}
		m.Rows = size / m.Cols
		if len(m.Data) != size && err == nil {
			err = fmt.Errorf("use: %s holds %d values, want %v", Tensors[i], len(m.Data), shape)
		}
		i++
		return m
	}
	// dense is the next weights, kept [in, out], and the bias after them.
	dense := func(in, out int) *mat.Linear {
		w := take(in, out)
		return mat.NewLinearT(w, take(out).Data)
	}
	n := &network{embeddings: take(8002, 256), invTimescales: take(128).Data}
	for li, d := range []int{256, 512} {
		l := &n.layers[li]
		l.heads, l.scale = heads, float32(1/math.Sqrt(float64(d/heads)))
		l.norm1Scale, l.norm1Bias = take(d).Data, take(d).Data
		l.qkv = dense(d, 3*d)
		l.out = dense(d, 512)
		if li == 0 { // its input is narrower than its output: the residual is projected
			l.residual = dense(d, 512)
		}
		l.norm2Scale, l.norm2Bias = take(512).Data, take(512).Data
		l.ffn1 = dense(512, 1536)
		l.ffn2 = dense(1536, 512)
	}
	n.tanh = dense(512, 512)
	return n, err
}

// encode returns the embeddings of texts given as their pieces (at most
// MaxTokens of each). The dense layers run on every text's rows at once,
// which reads the weights once for the batch; attention stays within a text.
func (n *network) encode(texts [][]int) [][]float32 {
	var spans []span
	rows := 0
	for i, ids := range texts {
		texts[i] = ids[:min(len(ids), MaxTokens)]
		spans = append(spans, span{rows, rows + len(texts[i])})
		rows += len(texts[i])
	}
	// The input: each piece's embedding twice (the stack adds its input to
	// the input with positions) plus its position's sines and cosines.
	x := mat.New(rows, n.embeddings.Cols)
	half := len(n.invTimescales)
	for i, ids := range texts {
		for t, id := range ids {
			emb, row := n.embeddings.Row(id), x.Row(spans[i].from+t)
			for k := range half {
				angle := float64(t) * float64(n.invTimescales[k])
				row[k] = 2*emb[k] + float32(math.Sin(angle))
				row[half+k] = 2*emb[half+k] + float32(math.Cos(angle))
			}
		}
	}
	if rows > 0 {
		for i := range n.layers {
			x = n.layers[i].apply(x, spans)
		}
	}
	// Each text's mean over its pieces (none: zeros), then the tanh layer.
	pooled := mat.New(len(texts), n.tanh.In)
	for i, sp := range spans {
		mean := pooled.Row(i)
		for t := sp.from; t < sp.to; t++ {
			for j, v := range x.Row(t) {
				mean[j] += v
			}
		}
		for j := range mean {
			mean[j] /= float32(max(sp.to-sp.from, 1))
		}
	}
	out := n.tanh.Of(pooled)
	vectors := make([][]float32, len(texts))
	for i := range vectors {
		v := out.Row(i)
		var norm float64
		for j, x := range v {
			v[j] = float32(math.Tanh(float64(x)))
			norm += float64(v[j]) * float64(v[j])
		}
		scale := float32(1 / math.Sqrt(max(norm, 1e-12)))
		for j := range v {
			v[j] *= scale
		}
		vectors[i] = v
	}
	return vectors
}

// span is one text's rows.
type span struct{ from, to int }

// apply runs one transformer layer over the texts' rows.
func (l *layer) apply(x mat.Matrix, spans []span) mat.Matrix {
	d := x.Cols
	width := d / l.heads
	qkv := l.qkv.Of(normalised(x, l.norm1Scale, l.norm1Bias))
	attended := mat.New(x.Rows, d)
	for _, sp := range spans {
		n := sp.to - sp.from
		if n == 0 {
			continue
		}
		text, out := qkv.Slice(sp.from, sp.to), attended.Slice(sp.from, sp.to)
		scores := mat.New(n, n)
		for h := range l.heads {
			q, k, v := text.Columns(h*width, width), text.Columns(d+h*width, width), text.Columns(2*d+h*width, width)
			blas32.Gemm(blas.NoTrans, blas.Trans, l.scale, q, k, 0, scores.General())
			for t := range n {
				mat.Softmax(scores.Row(t))
			}
			blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, scores.General(), v, 0, out.Columns(h*width, width))
		}
	}
	y := l.out.Of(attended)
	residual := x
	if l.residual != nil {
		residual = l.residual.Of(x)
	}
	y.Add(residual)
	hidden := l.ffn1.Of(normalised(y, l.norm2Scale, l.norm2Bias))
	for i, h := range hidden.Data {
		hidden.Data[i] = max(h, 0)
	}
	y.Add(l.ffn2.Of(hidden))
	return y
}

// normalised is each row scaled to mean 0 and variance 1 (epsilon 1e-6),
// then by scale and bias, in a new mat.Matrix.
func normalised(m mat.Matrix, scale, bias []float32) mat.Matrix {
	out := mat.New(m.Rows, m.Cols)
	mat.LayerNorm(out, m, scale, bias, 1e-6)
	return out
}
