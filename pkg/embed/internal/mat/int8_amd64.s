//go:build !purego

#include "textflag.h"

// A tile's arguments that every tile takes at the same offsets: the
// activations (SI), their stride (DX), the rows' scales (BX), the panel
// (DI), the steps (CX), the columns' scales (R12) and the bias (R13).
#define TILE_ARGS \
	MOVQ a+0(FP), SI; MOVQ lda+8(FP), DX; MOVQ rowScale+16(FP), BX; MOVQ b+24(FP), DI; \
	MOVQ steps+32(FP), CX; MOVQ colScale+40(FP), R12; MOVQ bias+48(FP), R13

// The output's stride in bytes (R11), and the fourth row's activations
// (R8), and with eight rows the seventh's (R9): rows are reached from SI,
// R8 and R9 with DX × 1 or 2.
#define ROWS4 SHLQ $2, R11; LEAQ (SI)(DX*2), R8; ADDQ DX, R8
#define ROWS8 ROWS4; LEAQ (R8)(DX*2), R9; ADDQ DX, R9

// The accumulators of four rows (Z0-Z7), or of eight (Z0-Z15), set to 0.
#define ZERO4 \
	VPXORD Z0, Z0, Z0; VPXORD Z1, Z1, Z1; VPXORD Z2, Z2, Z2; VPXORD Z3, Z3, Z3; \
	VPXORD Z4, Z4, Z4; VPXORD Z5, Z5, Z5; VPXORD Z6, Z6, Z6; VPXORD Z7, Z7, Z7
#define ZERO8 \
	ZERO4; VPXORD Z8, Z8, Z8; VPXORD Z9, Z9, Z9; VPXORD Z10, Z10, Z10; VPXORD Z11, Z11, Z11; \
	VPXORD Z12, Z12, Z12; VPXORD Z13, Z13, Z13; VPXORD Z14, Z14, Z14; VPXORD Z15, Z15, Z15

// A step of one row of a tile: the row's next inputs (four bytes at addr)
// broadcast to z, times the panel's two halves (Z16, Z17), added into the
// row's two accumulators.
#define WORDS_ROW(addr, z, acc0, acc1) VPBROADCASTD addr, z; VPDPWSSD Z16, z, acc0; VPDPWSSD Z17, z, acc1
#define BYTES_ROW(addr, z, acc0, acc1) VPBROADCASTD addr, z; VPDPBUSD Z16, z, acc0; VPDPBUSD Z17, z, acc1

// The end of one row of a tile: its sums as floats, times the row's scale
// (at off(BX)) and the columns' (Z26, Z27), plus the bias (Z28, Z29),
// stored at R10, which moves on to the next row.
#define STORE_ROW(off, acc0, acc1) \
	VBROADCASTSS off(BX), Z30; \
	VMULPS Z30, Z26, Z31; VCVTDQ2PS acc0, acc0; VFMADD213PS Z28, Z31, acc0; VMOVUPS acc0, (R10); \
	VMULPS Z30, Z27, Z31; VCVTDQ2PS acc1, acc1; VFMADD213PS Z29, Z31, acc1; VMOVUPS acc1, 64(R10); \
	ADDQ R11, R10

// STORE_ROW for byte activations, whose sums first lose what the 128s
// added (Z24, Z25).
#define STORE_BYTES_ROW(off, acc0, acc1) VPSUBD Z24, acc0, acc0; VPSUBD Z25, acc1, acc1; STORE_ROW(off, acc0, acc1)

// func int8Tile8x32(a *int16, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, c *float32, ldc int)
//
// c[i][j] = (Σ_t a[i·lda+t]·w[t][j]) · rowScale[i] · colScale[j] + bias[j],
// for i < 8, j < 32, t < 2·steps (steps ≥ 1): eight rows of activations,
// quantised to 16 bits, times one panel of thirty-two outputs' int8
// weights, packed two inputs by thirty-two outputs a step and widened to
// 16 bits as they are loaded (VPMOVSXBW). VPDPWSSD (AVX-512 VNNI) multiplies two pairs and adds them into
// each 32-bit lane; sixteen accumulators (eight rows × two halves of the
// panel) stay in registers for the whole sum, which the end turns back
// into floats. lda is in bytes.
TEXT ·int8Tile8x32(SB), NOSPLIT, $0-72
	TILE_ARGS
	MOVQ c+56(FP), R10
	MOVQ ldc+64(FP), R11
	ROWS8

	ZERO8

loop8:
	VPMOVSXBW (DI), Z16
	VPMOVSXBW 32(DI), Z17
	WORDS_ROW((SI), Z18, Z0, Z1)
	WORDS_ROW((SI)(DX*1), Z19, Z2, Z3)
	WORDS_ROW((SI)(DX*2), Z20, Z4, Z5)
	WORDS_ROW((R8), Z21, Z6, Z7)
	WORDS_ROW((R8)(DX*1), Z22, Z8, Z9)
	WORDS_ROW((R8)(DX*2), Z23, Z10, Z11)
	WORDS_ROW((R9), Z24, Z12, Z13)
	WORDS_ROW((R9)(DX*1), Z25, Z14, Z15)
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $4, R9
	ADDQ $64, DI
	DECQ CX
	JNZ  loop8

	VMOVUPS (R12), Z26
	VMOVUPS 64(R12), Z27
	VMOVUPS (R13), Z28
	VMOVUPS 64(R13), Z29
	STORE_ROW(0, Z0, Z1)
	STORE_ROW(4, Z2, Z3)
	STORE_ROW(8, Z4, Z5)
	STORE_ROW(12, Z6, Z7)
	STORE_ROW(16, Z8, Z9)
	STORE_ROW(20, Z10, Z11)
	STORE_ROW(24, Z12, Z13)
	STORE_ROW(28, Z14, Z15)
	VZEROUPPER
	RET

// func int8Tile4x32(a *int16, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, c *float32, ldc int)
//
// int8Tile8x32 for four rows: a product's last rows when four or fewer
// are left (a question is a tile and a few rows), which the eight-row tile
// would multiply padded with zeros.
TEXT ·int8Tile4x32(SB), NOSPLIT, $0-72
	TILE_ARGS
	MOVQ c+56(FP), R10
	MOVQ ldc+64(FP), R11
	ROWS4

	ZERO4

loop4:
	VPMOVSXBW (DI), Z16
	VPMOVSXBW 32(DI), Z17
	WORDS_ROW((SI), Z18, Z0, Z1)
	WORDS_ROW((SI)(DX*1), Z19, Z2, Z3)
	WORDS_ROW((SI)(DX*2), Z20, Z4, Z5)
	WORDS_ROW((R8), Z21, Z6, Z7)
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $64, DI
	DECQ CX
	JNZ  loop4

	VMOVUPS (R12), Z26
	VMOVUPS 64(R12), Z27
	VMOVUPS (R13), Z28
	VMOVUPS 64(R13), Z29
	STORE_ROW(0, Z0, Z1)
	STORE_ROW(4, Z2, Z3)
	STORE_ROW(8, Z4, Z5)
	STORE_ROW(12, Z6, Z7)
	VZEROUPPER
	RET

// func int8Tile8x32u(a *uint8, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, offset *int32, c *float32, ldc int)
//
// int8Tile8x32 with 8-bit activations: a's bytes are q + 128, four inputs
// a step, and the panel holds four inputs of each column together.
// VPDPBUSD multiplies four unsigned bytes by four signed ones and adds
// them into each 32-bit lane: twice VPDPWSSD's products an instruction.
// The 128s add offset[j] to column j's sums, which the end takes away.
TEXT ·int8Tile8x32u(SB), NOSPLIT, $0-80
	TILE_ARGS
	MOVQ offset+56(FP), R14
	MOVQ c+64(FP), R10
	MOVQ ldc+72(FP), R11
	ROWS8

	ZERO8

loop8u:
	VMOVDQU32 (DI), Z16
	VMOVDQU32 64(DI), Z17
	BYTES_ROW((SI), Z18, Z0, Z1)
	BYTES_ROW((SI)(DX*1), Z19, Z2, Z3)
	BYTES_ROW((SI)(DX*2), Z20, Z4, Z5)
	BYTES_ROW((R8), Z21, Z6, Z7)
	BYTES_ROW((R8)(DX*1), Z22, Z8, Z9)
	BYTES_ROW((R8)(DX*2), Z23, Z10, Z11)
	BYTES_ROW((R9), Z24, Z12, Z13)
	BYTES_ROW((R9)(DX*1), Z25, Z14, Z15)
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $4, R9
	ADDQ $128, DI
	DECQ CX
	JNZ  loop8u

	VMOVDQU32 (R14), Z24
	VMOVDQU32 64(R14), Z25
	VMOVUPS (R12), Z26
	VMOVUPS 64(R12), Z27
	VMOVUPS (R13), Z28
	VMOVUPS 64(R13), Z29
	STORE_BYTES_ROW(0, Z0, Z1)
	STORE_BYTES_ROW(4, Z2, Z3)
	STORE_BYTES_ROW(8, Z4, Z5)
	STORE_BYTES_ROW(12, Z6, Z7)
	STORE_BYTES_ROW(16, Z8, Z9)
	STORE_BYTES_ROW(20, Z10, Z11)
	STORE_BYTES_ROW(24, Z12, Z13)
	STORE_BYTES_ROW(28, Z14, Z15)
	VZEROUPPER
	RET

// func int8Tile4x32u(a *uint8, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, offset *int32, c *float32, ldc int)
//
// int8Tile8x32u for four rows (see int8Tile4x32).
TEXT ·int8Tile4x32u(SB), NOSPLIT, $0-80
	TILE_ARGS
	MOVQ offset+56(FP), R14
	MOVQ c+64(FP), R10
	MOVQ ldc+72(FP), R11
	ROWS4

	ZERO4

loop4u:
	VMOVDQU32 (DI), Z16
	VMOVDQU32 64(DI), Z17
	BYTES_ROW((SI), Z18, Z0, Z1)
	BYTES_ROW((SI)(DX*1), Z19, Z2, Z3)
	BYTES_ROW((SI)(DX*2), Z20, Z4, Z5)
	BYTES_ROW((R8), Z21, Z6, Z7)
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $128, DI
	DECQ CX
	JNZ  loop4u

	VMOVDQU32 (R14), Z24
	VMOVDQU32 64(R14), Z25
	VMOVUPS (R12), Z26
	VMOVUPS 64(R12), Z27
	VMOVUPS (R13), Z28
	VMOVUPS 64(R13), Z29
	STORE_BYTES_ROW(0, Z0, Z1)
	STORE_BYTES_ROW(4, Z2, Z3)
	STORE_BYTES_ROW(8, Z4, Z5)
	STORE_BYTES_ROW(12, Z6, Z7)
	VZEROUPPER
	RET

// func maxAbs16(x *float32, n int) float32
//
// The largest |x[i]| for i < n, n a positive multiple of 16. AVX2 only:
// both int8 kernels quantise with it.
TEXT ·maxAbs16(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	SHRQ         $4, CX
	MOVL         $0x7fffffff, AX
	MOVD         AX, X2
	VPBROADCASTD X2, Y2
	VXORPS       Y0, Y0, Y0
	VXORPS       Y1, Y1, Y1

maxloop:
	VANDPS (SI), Y2, Y3
	VMAXPS Y3, Y0, Y0
	VANDPS 32(SI), Y2, Y4
	VMAXPS Y4, Y1, Y1
	ADDQ   $64, SI
	DECQ   CX
	JNZ    maxloop

	VMAXPS       Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VMOVSS       X0, ret+16(FP)
	VZEROUPPER
	RET

// func quantise16(dst *int16, x *float32, n int, inv float32)
//
// dst[i] = round(x[i]·inv) for i < n, n a positive multiple of 16,
// rounding halves to even (the processor's default); |x[i]·inv| < 2¹⁵.
// AVX2 only: VPACKSSDW packs within each 128-bit half, which VPERMQ puts
// back in order.
TEXT ·quantise16(SB), NOSPLIT, $0-28
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	SHRQ         $4, CX
	VBROADCASTSS inv+24(FP), Y2

qloop:
	VMULPS    (SI), Y2, Y0
	VMULPS    32(SI), Y2, Y1
	VCVTPS2DQ Y0, Y0
	VCVTPS2DQ Y1, Y1
	VPACKSSDW Y1, Y0, Y0
	VPERMQ    $0xd8, Y0, Y0
	VMOVDQU   Y0, (DI)
	ADDQ      $64, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       qloop
	VZEROUPPER
	RET

// func quantiseBytes16(dst *uint8, x *float32, n int, inv float32)
//
// quantise16 into bytes, each round(x[i]·inv) + 128; |x[i]·inv| ≤ 127.
TEXT ·quantiseBytes16(SB), NOSPLIT, $0-28
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	SHRQ         $4, CX
	VBROADCASTSS inv+24(FP), Z1
	MOVL         $0x80808080, AX
	VPBROADCASTD AX, X2

qbloop:
	VMULPS    (SI), Z1, Z0
	VCVTPS2DQ Z0, Z0
	VPMOVSDB  Z0, X0
	VPXORD    X2, X0, X0
	VMOVDQU   X0, (DI)
	ADDQ      $64, SI
	ADDQ      $16, DI
	DECQ      CX
	JNZ       qbloop
	VZEROUPPER
	RET
