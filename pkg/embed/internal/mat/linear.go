package mat

import (
	"os"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas32"
)

// KernelsEnv names the environment variable that, set to "portable",
// makes every product take the portable path (gonum's) even where this
// machine has a kernel of Hector's own: how the tests cover the path other
// machines take.
const KernelsEnv = "HECTOR_KERNELS"

// Kernel reports whether products run on Hector's own kernel (AVX2 and
// FMA on amd64) rather than the portable path.
var Kernel = haveKernel && kernelUsable() && os.Getenv(KernelsEnv) != "portable"

// panelWidth is how many output columns one packed panel holds: the
// kernel's tile is 6 rows × 16 columns.
const (
	panelWidth = 16
	tileRows   = 6
)

// Linear is a dense layer, y = x·Wᵀ + b, its weights laid out once, when
// the model loads, the way the product on this machine reads them fastest.
type Linear struct {
	Out, In int
	w       Matrix // as the model keeps it, the portable path's: [Out, In], or [In, Out] when inOut
	inOut   bool
	bias    []float32 // Out values; with the kernel, padded to whole panels
	// panels: with the kernel, W's columns in panels of panelWidth outputs,
	// each In steps of panelWidth consecutive weights (zeros past Out), so
	// the kernel reads its weights in the order it uses them.
	panels []float32
	q      *int8Weights // where NewInt8 quantised the weights, instead of panels
}

// NewLinear lays out w ([out, in], as PyTorch keeps a linear layer's
// weights) and its bias for this machine's product. It keeps w only when
// the product is the portable one.
func NewLinear(w Matrix, bias []float32) *Linear {
	l := new(Linear)
	l.load(w, bias)
	return l
}

// NewLinearT is NewLinear for weights kept [in, out] (y = x·W + b), as
// TensorFlow keeps them.
func NewLinearT(w Matrix, bias []float32) *Linear {
	l := new(Linear)
	l.loadT(w, bias)
	return l
}

// load is NewLinear into l, over the memory l holds.
func (l *Linear) load(w Matrix, bias []float32) {
	l.Out, l.In, l.inOut = w.Rows, w.Cols, false
	if !Kernel || l.In == 0 {
		l.w, l.bias = w, bias
		return
	}
	l.pad(bias)
	for o := range l.Out {
		p, j := o/panelWidth, o%panelWidth
		panel := l.panels[p*l.In*panelWidth:]
		for k, v := range w.Row(o) {
			panel[k*panelWidth+j] = v
		}
	}
}

// loadT is NewLinearT into l, over the memory l holds.
func (l *Linear) loadT(w Matrix, bias []float32) {
	l.Out, l.In, l.inOut = w.Cols, w.Rows, true
	if !Kernel || l.In == 0 {
		l.w, l.bias = w, bias
		return
	}
	l.pad(bias)
	l.packColumns(w)
}

// packColumns packs w, kept [In, Out]: a panel is 16 of its columns, row
// after row.
func (l *Linear) packColumns(w Matrix) {
	for k := range w.Rows {
		row := w.Row(k)
		for p := 0; p*panelWidth < w.Cols; p++ {
			copy(l.panels[(p*l.In+k)*panelWidth:][:panelWidth], row[p*panelWidth:min(len(row), (p+1)*panelWidth)])
		}
	}
}

// pad makes the kernel's bias and panels, zero past Out.
func (l *Linear) pad(bias []float32) {
	n := (l.Out + panelWidth - 1) / panelWidth
	l.bias = grow(&l.bias, n*panelWidth)
	clear(l.bias)
	copy(l.bias, bias)
	l.panels = grow(&l.panels, n*l.In*panelWidth)
	clear(l.panels)
}

// Pair multiplies matrices two at a time, as attention does, laying the
// second out in the memory of the one before: a text's attention
// allocated 19 MB in 128 pieces when each product laid out its own, and
// two goroutines allocating that fast embed no faster than one.
type Pair struct {
	l     Linear
	zeros []float32
}

// ProductT writes a·bᵀ (a is [n, d], b [m, d]: attention's scores) over
// out.
func (p *Pair) ProductT(a, b, out Matrix) {
	p.l.load(b, p.zero(b.Rows))
	p.l.Into(a, out)
}

// Product writes a·b (a is [n, m], b [m, d]: attention's weighted values)
// over out.
func (p *Pair) Product(a, b, out Matrix) {
	p.l.loadT(b, p.zero(b.Cols))
	p.l.Into(a, out)
}

// zero is a bias of n zeros (nothing writes p.zeros).
func (p *Pair) zero(n int) []float32 { return grow(&p.zeros, n) }

// parallelWork is the number of multiply-adds from which a product wakes
// a helper on another core to share it (see split): below it, waking one
// costs more than it saves.
const parallelWork = 1 << 22

// Of is x·Wᵀ + b.
func (l *Linear) Of(x Matrix) Matrix {
	out := New(x.Rows, l.Out)
	l.Into(x, out)
	return out
}

// Into writes x·Wᵀ + b over out (x.Rows × l.Out), whatever it held: a
// caller that keeps its matrices from one product to the next allocates
// nothing, which keeps the collector, and the memory it would zero, off
// the cores the products are shared between (two cores multiplied a
// 256-row product 1.2 times as fast as one when each product allocated
// its result, 1.8 times when it did not).
func (l *Linear) Into(x, out Matrix) {
	if x.Cols != l.In || out.Rows != x.Rows || out.Cols != l.Out {
		panic("mat: a product of mismatched shapes")
	}
	if x.Rows == 0 {
		return
	}
	if l.q != nil {
		l.int8Of(x, out)
		return
	}
	if l.panels == nil {
		for i := range out.Rows {
			copy(out.Row(i), l.bias)
		}
		if l.In == 0 || l.Out == 0 {
			return
		}
		t := blas.Trans
		if l.inOut {
			t = blas.NoTrans
		}
		blas32.Gemm(blas.NoTrans, t, 1, x.General(), l.w.General(), 1, out.General())
		return
	}
	// The last rows, when fewer than a tile, are copied into a tile of
	// their own padded with zeros, once for every panel.
	full := x.Rows - x.Rows%tileRows
	var tail []float32
	if full < x.Rows {
		s := scratches.Get().(*scratch)
		defer scratches.Put(s)
		tail = grow(&s.floats, tileRows*l.In)
		clear(tail[copy(tail, x.Data[full*l.In:]):])
	}
	split(len(l.bias)/panelWidth, x.Rows*l.Out*l.In, func(from, to int) { l.panelsOf(x, tail, out, from, to) })
}

// panelsOf writes out's columns of panels from to to.
func (l *Linear) panelsOf(x Matrix, tail []float32, out Matrix, from, to int) {
	full := x.Rows - x.Rows%tileRows
	var edge [tileRows * panelWidth]float32
	for p := from; p < to; p++ {
		b, bias := &l.panels[p*l.In*panelWidth], &l.bias[p*panelWidth]
		col := p * panelWidth
		cols := min(panelWidth, l.Out-col)
		for i := 0; i < full; i += tileRows {
			if cols == panelWidth {
				tile6x16(&x.Data[i*l.In], l.In, b, l.In, bias, &out.Data[i*l.Out+col], l.Out)
				continue
			}
			tile6x16(&x.Data[i*l.In], l.In, b, l.In, bias, &edge[0], panelWidth)
			for r := range tileRows {
				copy(out.Data[(i+r)*l.Out+col:][:cols], edge[r*panelWidth:])
			}
		}
		if tail != nil {
			tile6x16(&tail[0], l.In, b, l.In, bias, &edge[0], panelWidth)
			for r := range x.Rows - full {
				copy(out.Data[(full+r)*l.Out+col:][:cols], edge[r*panelWidth:])
			}
		}
	}
}
