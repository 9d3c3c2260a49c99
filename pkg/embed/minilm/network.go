package minilm

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// The shape of all-MiniLM-L6-v2: a 6-layer BERT of width 384, 12
// attention heads, a feed-forward layer of 1,536.
const (
	width         = 384
	layers        = 6
	heads         = 12
	intermediate  = 1536
	vocabSize     = 30522
	maxPositions  = 512
	layerNormEps  = 1e-12
	headWidth     = width / heads
	attentionNorm = 0.17677669529663687 // 1/sqrt(headWidth)
)

// network is the encoder: pieces' and positions' embeddings, six
// transformer layers, and the mean of the last layer's outputs over a
// text's pieces, scaled to length 1, as sentence-transformers pools it.
type network struct {
	words, positions matrix // [vocab, width], [positions, width]
	tokenType        []float32
	embNorm          norm
	layers           [layers]layer
}

type norm struct{ scale, bias []float32 }

// layer is one transformer layer. Dense weights are as PyTorch keeps
// them, [out, in]: y = x·Wᵀ + b.
type layer struct {
	q, k, v, out  dense
	attNorm       norm
	ffnIn, ffnOut dense
	ffnNorm       norm
}

type dense struct {
	w matrix // [out, in]
	b []float32
}

func newNetwork(t map[string]tensor) (*network, error) {
	var err error
	take := func(name string, shape ...int) matrix {
		tt, ok := t[name]
		switch {
		case err != nil:
			return matrix{}
		case !ok:
			err = fmt.Errorf("minilm: the model has no tensor %s", name)
			return matrix{}
		case fmt.Sprint(tt.shape) != fmt.Sprint(shape):
			err = fmt.Errorf("minilm: tensor %s has shape %v, want %v", name, tt.shape, shape)
			return matrix{}
		}
		m := matrix{rows: 1, cols: shape[len(shape)-1], data: tt.data}
		if len(shape) == 2 {
			m.rows = shape[0]
		}
		return m
	}
	vec := func(name string, n int) []float32 { return take(name, n).data }
	lin := func(name string, out, in int) dense {
		return dense{w: take(name+".weight", out, in), b: vec(name+".bias", out)}
	}
	nrm := func(name string) norm { return norm{vec(name+".weight", width), vec(name+".bias", width)} }
	n := &network{words: take("embeddings.word_embeddings.weight", vocabSize, width),
		positions: take("embeddings.position_embeddings.weight", maxPositions, width),
		embNorm:   nrm("embeddings.LayerNorm")}
	n.tokenType = take("embeddings.token_type_embeddings.weight", 2, width).row(0)
	for i := range n.layers {
		p := fmt.Sprintf("encoder.layer.%d.", i)
		n.layers[i] = layer{
			q: lin(p+"attention.self.query", width, width), k: lin(p+"attention.self.key", width, width),
			v: lin(p+"attention.self.value", width, width), out: lin(p+"attention.output.dense", width, width),
			attNorm: nrm(p + "attention.output.LayerNorm"),
			ffnIn:   lin(p+"intermediate.dense", intermediate, width), ffnOut: lin(p+"output.dense", width, intermediate),
			ffnNorm: nrm(p + "output.LayerNorm"),
		}
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
	x := newMatrix(rows, width)
	for i, ids := range texts {
		for t, id := range ids {
			row, word, pos := x.row(spans[i].from+t), n.words.row(id), n.positions.row(t)
			for j := range row {
				row[j] = word[j] + pos[j] + n.tokenType[j]
			}
		}
	}
	x.normalise(n.embNorm)
	for i := range n.layers {
		x = n.layers[i].apply(x, spans)
	}
	vectors := make([][]float32, len(texts))
	for i, sp := range spans {
		mean := make([]float64, width)
		for r := sp.from; r < sp.to; r++ {
			for j, v := range x.row(r) {
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

// apply runs one layer over the texts' rows.
func (l *layer) apply(x matrix, spans []span) matrix {
	q, k, v := x.times(l.q), x.times(l.k), x.times(l.v)
	ctx := newMatrix(x.rows, width)
	for _, sp := range spans {
		n := sp.to - sp.from
		scores := newMatrix(n, n)
		qs, ks, vs, out := q.rowsOf(sp), k.rowsOf(sp), v.rowsOf(sp), ctx.rowsOf(sp)
		for h := range heads {
			c := h * headWidth
			blas32.Gemm(blas.NoTrans, blas.Trans, attentionNorm, qs.columns(c, headWidth), ks.columns(c, headWidth), 0, scores.general())
			for t := range n {
				softmax(scores.row(t))
			}
			blas32.Gemm(blas.NoTrans, blas.NoTrans, 1, scores.general(), vs.columns(c, headWidth), 0, out.columns(c, headWidth))
		}
	}
	h := ctx.times(l.out)
	h.add(x)
	h.normalise(l.attNorm)
	hidden := h.times(l.ffnIn)
	for i, v := range hidden.data {
		hidden.data[i] = gelu(v)
	}
	y := hidden.times(l.ffnOut)
	y.add(h)
	y.normalise(l.ffnNorm)
	return y
}

// gelu is the exact GELU BERT uses: x·Φ(x).
func gelu(x float32) float32 {
	return float32(0.5 * float64(x) * (1 + math.Erf(float64(x)/math.Sqrt2)))
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

func (m matrix) rowsOf(s span) matrix {
	return matrix{rows: s.to - s.from, cols: m.cols, data: m.data[s.from*m.cols : s.to*m.cols]}
}

func (m matrix) general() blas32.General {
	return blas32.General{Rows: m.rows, Cols: m.cols, Stride: m.cols, Data: m.data}
}

// columns is a view of n columns from first.
func (m matrix) columns(first, n int) blas32.General {
	return blas32.General{Rows: m.rows, Cols: n, Stride: m.cols, Data: m.data[first : (m.rows-1)*m.cols+first+n]}
}

// times is m·Wᵀ + b.
func (m matrix) times(d dense) matrix {
	out := newMatrix(m.rows, d.w.rows)
	for i := range out.rows {
		copy(out.row(i), d.b)
	}
	if m.rows > 0 {
		blas32.Gemm(blas.NoTrans, blas.Trans, 1, m.general(), d.w.general(), 1, out.general())
	}
	return out
}

func (m matrix) add(other matrix) {
	for i, v := range other.data {
		m.data[i] += v
	}
}

// normalise scales each row to mean 0 and variance 1, then by the norm's
// scale and bias.
func (m matrix) normalise(n norm) {
	for i := range m.rows {
		x := m.row(i)
		var mean, variance float64
		for _, v := range x {
			mean += float64(v)
		}
		mean /= float64(len(x))
		for _, v := range x {
			variance += (float64(v) - mean) * (float64(v) - mean)
		}
		variance /= float64(len(x))
		inv := 1 / math.Sqrt(variance+layerNormEps)
		for j, v := range x {
			x[j] = float32((float64(v)-mean)*inv)*n.scale[j] + n.bias[j]
		}
	}
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
