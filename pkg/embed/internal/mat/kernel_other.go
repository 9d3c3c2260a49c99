//go:build !amd64 || purego

package mat

// No kernel of Hector's own here: the portable path (gonum) does the work.
const haveKernel = false

func kernelUsable() bool { return false }

func tile6x16(a *float32, lda int, b *float32, k int, bias *float32, c *float32, ldc int) {
	panic("mat: no kernel on this machine")
}

func vnniUsable() bool { return false }

func int8Tile8x32(a *int16, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, c *float32, ldc int) {
	panic("mat: no int8 kernel on this machine")
}

func int8Tile4x32(a *int16, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, c *float32, ldc int) {
	panic("mat: no int8 kernel on this machine")
}

func int8Tile6x16(a *int16, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, c *float32, ldc int) {
	panic("mat: no int8 kernel on this machine")
}

func int8Tile3x16(a *int16, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, c *float32, ldc int) {
	panic("mat: no int8 kernel on this machine")
}

func int8Tile8x32u(a *uint8, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, offset *int32, c *float32, ldc int) {
	panic("mat: no int8 kernel on this machine")
}

func int8Tile4x32u(a *uint8, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, offset *int32, c *float32, ldc int) {
	panic("mat: no int8 kernel on this machine")
}

func maxAbs16(x *float32, n int) float32 { panic("mat: no int8 kernel on this machine") }

func quantise16(dst *int16, x *float32, n int, inv float32) {
	panic("mat: no int8 kernel on this machine")
}

func quantiseBytes16(dst *uint8, x *float32, n int, inv float32) {
	panic("mat: no int8 kernel on this machine")
}

func max8(x *float32, n int) float32 { panic("mat: no kernel on this machine") }

func expShift8(x *float32, n int, top float32) float32 { panic("mat: no kernel on this machine") }

func scale8(x *float32, n int, s float32) { panic("mat: no kernel on this machine") }

func layerNorm8(dst, src, scale, bias *float32, n int, eps float64) {
	panic("mat: no kernel on this machine")
}

func gelu8(x *float32, n int, table *float32) { panic("mat: no kernel on this machine") }
