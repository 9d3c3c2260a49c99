package mat

import (
	"math"
	"math/rand/v2"
	"testing"
)

// layerNormRef is LayerNorm as the formula reads, one value at a time.
func layerNormRef(x, scale, bias []float32, eps float64) []float32 {
	var mean, variance float64
	for _, v := range x {
		mean += float64(v)
	}
	mean /= float64(len(x))
	for _, v := range x {
		variance += (float64(v) - mean) * (float64(v) - mean)
	}
	variance /= float64(len(x))
	y := make([]float32, len(x))
	for j, v := range x {
		y[j] = float32((float64(v)-mean)/math.Sqrt(variance+eps))*scale[j] + bias[j]
	}
	return y
}

// LayerNorm is the formula, on every width the kernel takes (multiples of
// 8) and those it leaves to Go, on a row of zeros (eps keeps it finite),
// on rows far from 0 (where the mean must be taken before the variance),
// in place as into another matrix.
func TestLayerNorm(t *testing.T) {
	withKernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(1, 2))
		for _, width := range []int{1, 3, 4, 7, 8, 16, 24, 384, 385, 768} {
			x := New(4, width)
			for i := range x.Data {
				x.Data[i] = float32(r.NormFloat64()*3 + 5)
			}
			copy(x.Row(2), make([]float32, width)) // a row of zeros: eps keeps it finite
			x.Row(2)[0] = 1e-3
			for j := range x.Row(3) {
				x.Row(3)[j] = float32(1e4 + r.NormFloat64()) // far from 0, close together
			}
			scale, bias := make([]float32, width), make([]float32, width)
			for j := range scale {
				scale[j], bias[j] = float32(r.NormFloat64()), float32(r.NormFloat64())
			}
			got := New(4, width)
			LayerNorm(got, x, scale, bias, 1e-12)
			for i := range x.Rows {
				want := layerNormRef(x.Row(i), scale, bias, 1e-12)
				for j, w := range want {
					if g := got.Row(i)[j]; math.IsNaN(float64(g)) || math.Abs(float64(g-w)) > 1e-5*(1+math.Abs(float64(w))) {
						t.Fatalf("width %d, row %d, value %d: %v, want %v", width, i, j, g, w)
					}
				}
			}
			LayerNorm(x, x, scale, bias, 1e-12) // in place
			for i := range x.Data {
				if x.Data[i] != got.Data[i] {
					t.Fatalf("width %d: in place gives %v at %d, apart %v", width, x.Data[i], i, got.Data[i])
				}
			}
		}
	})
}

func BenchmarkLayerNorm(b *testing.B) {
	x := New(16, 384)
	for i := range x.Data {
		x.Data[i] = float32(i%97) / 10
	}
	scale, bias := make([]float32, 384), make([]float32, 384)
	for j := range scale {
		scale[j] = 1
	}
	benchKernels(b, func(b *testing.B) {
		for b.Loop() {
			LayerNorm(x, x, scale, bias, 1e-12)
		}
	})
}

// The kernel's layer norm is the Go's to the bit (same sums in the same
// order, no fused multiply-add): an encoder's vectors do not depend on
// the path, and neither do the figures retrieval was measured with.
func TestLayerNormKernelIsTheGoArithmetic(t *testing.T) {
	if !(haveKernel && kernelUsable()) {
		t.Skip("no kernel on this machine")
	}
	was := Kernel
	t.Cleanup(func() { Kernel = was })
	r := rand.New(rand.NewPCG(7, 8))
	for _, width := range []int{8, 16, 384, 1536} {
		x := New(8, width)
		for i := range x.Data {
			x.Data[i] = float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(8)-3)))
		}
		scale, bias := make([]float32, width), make([]float32, width)
		for j := range scale {
			scale[j], bias[j] = float32(r.NormFloat64()), float32(r.NormFloat64())
		}
		want, got := New(8, width), New(8, width)
		Kernel = false
		LayerNorm(want, x, scale, bias, 1e-12)
		Kernel = true
		LayerNorm(got, x, scale, bias, 1e-12)
		for i := range want.Data {
			if math.Float32bits(got.Data[i]) != math.Float32bits(want.Data[i]) {
				t.Fatalf("width %d, value %d: the kernel gives %v, the Go %v", width, i, got.Data[i], want.Data[i])
			}
		}
	}
}
