package use

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Every float16 widens and rounds back to itself.
func TestHalfRoundTrip(t *testing.T) {
	for h := range 1 << 16 {
		f := fromHalf(uint16(h))
		if math.IsNaN(float64(f)) {
			continue
		}
		if back := toHalf(f); back != uint16(h) {
			t.Fatalf("%#04x widens to %g, which rounds to %#04x", h, f, back)
		}
	}
}

// Rounding to float16 is to the nearest: no float16 is closer to the
// value than the one chosen.
func TestHalfRoundsToNearest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 100000 {
		f := float32(r.NormFloat64() * math.Pow(10, float64(r.IntN(9)-6)))
		h := toHalf(f)
		got := math.Abs(float64(fromHalf(h)) - float64(f))
		for _, n := range []uint16{h - 1, h + 1} {
			if other := math.Abs(float64(fromHalf(n)) - float64(f)); other < got && (n^h)&0x8000 == 0 {
				t.Fatalf("%g rounds to %g; %g is nearer", f, fromHalf(h), fromHalf(n))
			}
		}
	}
}
