package hashid

import "testing"

func TestHexSeparatesParts(t *testing.T) {
	if Hex("ab", "c") == Hex("a", "bc") {
		t.Error("parts run together")
	}
	if got := Hex("a"); len(got) != 64 || got != Hex("a") {
		t.Errorf("Hex(a) = %q, want 64 stable hex characters", got)
	}
}
