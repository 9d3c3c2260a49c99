package mat

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Softmax matches a float64 softmax, with the kernel and without, on rows
// of every length up to past a block, and long ones; the spreads reach
// values whose exponential is below what float32 holds.
func TestSoftmax(t *testing.T) {
	withKernel(t, func(t *testing.T) {
		r := rand.New(rand.NewPCG(7, 8))
		lengths := []int{128, 300, 513}
		for n := 1; n <= 40; n++ {
			lengths = append(lengths, n)
		}
		for _, n := range lengths {
			for _, spread := range []float64{0.01, 1, 8, 60} {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(r.NormFloat64()*spread + 5)
				}
				checkSoftmax(t, x)
			}
		}
		checkSoftmax(t, []float32{-1e30, 0, 3, -200, 88, 88, -88, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10})
	})
}

func checkSoftmax(t *testing.T, x []float32) {
	t.Helper()
	top := math.Inf(-1)
	for _, v := range x {
		top = math.Max(top, float64(v))
	}
	want := make([]float64, len(x))
	var sum float64
	for i, v := range x {
		want[i] = math.Exp(float64(v) - top)
		sum += want[i]
	}
	got := append([]float32(nil), x...)
	Softmax(got)
	var total float64
	for i := range want {
		want[i] /= sum
		total += float64(got[i])
		// The sum of up to a few hundred terms in float32 lanes: a few
		// units in the last place of each.
		if d := math.Abs(float64(got[i]) - want[i]); d > 4e-6*want[i]+1e-37 {
			t.Fatalf("softmax of %d values: [%d] = %g, want %g (off by %.2g of it)", len(x), i, got[i], want[i], d/want[i])
		}
	}
	if math.Abs(total-1) > 1e-5 {
		t.Fatalf("softmax of %d values sums to %g", len(x), total)
	}
}

// BenchmarkSoftmax: one attention row of a 128-piece text.
//
//	go test -run '^$' -bench Softmax ./pkg/embed/internal/mat
func BenchmarkSoftmax(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := make([]float32, 128)
	row := make([]float32, len(x))
	for i := range x {
		x[i] = float32(r.NormFloat64() * 3)
	}
	benchKernels(b, func(b *testing.B) {
		for b.Loop() {
			copy(row, x)
			Softmax(row)
		}
	})
}
