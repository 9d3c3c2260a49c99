//go:build !amd64 || purego

package mat

// No kernel of Hector's own here: the portable path (gonum) does the work.
const haveKernel = false

func kernelUsable() bool { return false }

func tile6x16(a *float32, lda int, b *float32, k int, bias *float32, c *float32, ldc int) {
	panic("mat: no kernel on this machine")
}
