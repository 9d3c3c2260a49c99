package use

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// MaxTokens is how many pieces of a text the model reads: the rest is
// cut off, as the reference implementation does.
const MaxTokens = 128

// network is the encoder: a two-layer transformer over the pieces'
// embeddings and sinusoid positions, its outputs averaged, then a tanh
// layer, then scaled to length 1.
type network struct {
	embeddings    matrix    // [pieces, 256]
	invTimescales []float32 // 128: positions are sin and cos of position × these
	layers        [2]layer
	tanhW         matrix // [512, 512]
	tanhB         []float32
}

type layer struct {
	norm1Scale, norm1Bias []float32
	qkv                   matrix // [d, 3d]: queries, keys, values
	qkvB                  []float32
	out                   matrix // [d, 512]
	outB                  []float32
	residual              matrix // [d, 512] when d differs from 512 (the first layer)
	residualB             []float32
	norm2Scale, norm2Bias []float32
	ffn1                  matrix // [512, 1536]
	ffn1B                 []float32
	ffn2                  matrix // [1536, 512]
	ffn2B                 []float32
	heads                 int
	scale                 float32 // of the queries: 1/sqrt(head width)
}

const heads = 4

func newNetwork(t []Tensor) (*network, error) {
	var err error
	i := 0
	// take is the next tensor, which must hold shape's values.
	take := func(shape ...int) matrix {
		size := 1
		for _, d := range shape {
			size *= d
		}
		m := matrix{cols: shape[len(shape)-1], data: t[i].Data}
		m.rows = size / m.cols
		if len(m.data) != size && err == nil {
			err = fmt.Errorf("use: %s holds %d values, want %v", Tensors[i], len(m.data), shape)
		}
		i++
		return m
	}
	n := &network{embeddings: take(8002, 256), invTimescales: take(128).data}
	for li, d := range []int{256, 512} {
		l := &n.layers[li]
		l.heads, l.scale = heads, float32(1/math.Sqrt(float64(d/heads)))
		l.norm1Scale, l.norm1Bias = take(d).data, take(d).data
		l.qkv, l.qkvB = take(d, 3*d), take(3*d).data
		l.out, l.outB = take(d, 512), take(512).data
		if li == 0 { // its input is narrower than its output: the residual is projected
			l.residual, l.residualB = take(d, 512), take(512).data
		}
		l.norm2Scale, l.norm2Bias = take(512).data, take(512).data
		l.ffn1, l.ffn1B = take(512, 1536), take(1536).data
		l.ffn2, l.ffn2B = take(1536, 512), take(512).data
	}
	n.tanhW, n.tanhB = take(512, 512), take(512).data
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
	x := newMatrix(rows, n.embeddings.cols)
	half := len(n.invTimescales)
	for i, ids := range texts {
		for t, id := range ids {
			emb, row := n.embeddings.row(id), x.row(spans[i].from+t)
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
	pooled := newMatrix(len(texts), n.tanhW.rows)
	for i, sp := range spans {
		mean := pooled.row(i)
		for t := sp.from; t < sp.to; t++ {
			for j, v := range x.row(t) {
				mean[j] += v
			}
		}
		for j := range mean {
			mean[j] /= float32(max(sp.to-sp.from, 1))
		}
	}
	out := pooled.times(n.tanhW, n.tanhB)
	vectors := make([][]float32, len(texts))
	for i := range vectors {
		v := out.row(i)
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
func (l *layer) apply(x matrix, spans []span) matrix {
	d := x.cols
	width := d / l.heads
	qkv := x.normalised(l.norm1Scale, l.norm1Bias).times(l.qkv, l.qkvB)
	attended := newMatrix(x.rows, d)
	for _, sp := range spans {
		n := sp.to - sp.from
		if n == 0 {
			continue
		}
		text, out := qkv.rowsOf(sp), attended.rowsOf(sp)
		scores := newMatrix(n, n)
		for h := range l.heads {
			q, k, v := text.cols_(h*width, width), text.cols_(d+h*width, width), text.cols_(2*d+h*width, width)
			blas32.Gemm(blas.NoTrans, blas.Trans, l.scale, q, k, 0, scores.general())
			for t := range n {
				softmax(scores.row(t))
			}
			blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, scores.general(), v, 0, out.cols_(h*width, width))
		}
	}
	y := attended.times(l.out, l.outB)
	residual := x
	if l.residual.data != nil {
		residual = x.times(l.residual, l.residualB)
	}
	y.add(residual)
	hidden := y.normalised(l.norm2Scale, l.norm2Bias).times(l.ffn1, l.ffn1B)
	for i, h := range hidden.data {
		hidden.data[i] = max(h, 0)
	}
	y.add(hidden.times(l.ffn2, l.ffn2B))
	return y
}

// matrix is row-major: rows × cols.
type matrix struct {
	rows, cols int
	data       []float32
}

func newMatrix(rows, cols int) matrix {
	return matrix{rows: rows, cols: cols, data: make([]float32, rows*cols)}
}

func (m matrix) row(i int) []float32 { return m.data[i*m.cols : (i+1)*m.cols] }

// rowsOf is a view of a span's rows.
func (m matrix) rowsOf(s span) matrix {
	return matrix{rows: s.to - s.from, cols: m.cols, data: m.data[s.from*m.cols : s.to*m.cols]}
}

func (m matrix) general() blas32.General {
	return blas32.General{Rows: m.rows, Cols: m.cols, Stride: m.cols, Data: m.data}
}

// cols_ is a view of width columns from first.
func (m matrix) cols_(first, width int) blas32.General {
	return blas32.General{Rows: m.rows, Cols: width, Stride: m.cols, Data: m.data[first : (m.rows-1)*m.cols+first+width]}
}

// times returns m·w + bias (bias added to every row).
func (m matrix) times(w matrix, bias []float32) matrix {
	out := newMatrix(m.rows, w.cols)
	for i := range out.rows {
		copy(out.row(i), bias)
	}
	blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, m.general(), w.general(), 1, out.general())
	return out
}

func (m matrix) add(other matrix) {
	for i, v := range other.data {
		m.data[i] += v
	}
}

// normalised is each row scaled to mean 0 and variance 1 (epsilon 1e-6),
// then by scale and bias.
func (m matrix) normalised(scale, bias []float32) matrix {
	out := newMatrix(m.rows, m.cols)
	for i := range m.rows {
		x, y := m.row(i), out.row(i)
		var mean, variance float64
		for _, v := range x {
			mean += float64(v)
		}
		mean /= float64(len(x))
		for _, v := range x {
			variance += (float64(v) - mean) * (float64(v) - mean)
		}
		variance /= float64(len(x))
		inv := 1 / math.Sqrt(variance+1e-6)
		for j, v := range x {
			y[j] = float32((float64(v)-mean)*inv)*scale[j] + bias[j]
		}
	}
	return out
}

func softmax(x []float32) {
	top := float32(math.Inf(-1))
	for _, v := range x {
		top = max(top, v)
	}
	var sum float64
	for i, v := range x {
		e := math.Exp(float64(v - top))
		x[i] = float32(e)
		sum += e
	}
	for i := range x {
		x[i] = float32(float64(x[i]) / sum)
	}
}
