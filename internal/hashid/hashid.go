// Package hashid names things by a hash of their parts: stable, fixed
// length, and safe where names allow few characters.
package hashid

import (
	"crypto/sha256"
	"encoding/hex"
)

// Hex is the SHA-256 of parts, each followed by a zero byte (so that
// ("ab", "c") and ("a", "bc") differ), as 64 hex characters.
func Hex(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
