//go:build !purego

#include "textflag.h"

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
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), DX
	MOVQ rowScale+16(FP), BX
	MOVQ b+24(FP), DI
	MOVQ steps+32(FP), CX
	MOVQ colScale+40(FP), R12
	MOVQ bias+48(FP), R13
	MOVQ c+56(FP), R10
	MOVQ ldc+64(FP), R11
	SHLQ $2, R11
	LEAQ (SI)(DX*2), R8
	ADDQ DX, R8
	LEAQ (R8)(DX*2), R9
	ADDQ DX, R9

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7
	VPXORD Z8, Z8, Z8
	VPXORD Z9, Z9, Z9
	VPXORD Z10, Z10, Z10
	VPXORD Z11, Z11, Z11
	VPXORD Z12, Z12, Z12
	VPXORD Z13, Z13, Z13
	VPXORD Z14, Z14, Z14
	VPXORD Z15, Z15, Z15

loop:
	VPMOVSXBW (DI), Z16
	VPMOVSXBW 32(DI), Z17
	VPBROADCASTD (SI), Z18
	VPDPWSSD Z16, Z18, Z0
	VPDPWSSD Z17, Z18, Z1
	VPBROADCASTD (SI)(DX*1), Z19
	VPDPWSSD Z16, Z19, Z2
	VPDPWSSD Z17, Z19, Z3
	VPBROADCASTD (SI)(DX*2), Z20
	VPDPWSSD Z16, Z20, Z4
	VPDPWSSD Z17, Z20, Z5
	VPBROADCASTD (R8), Z21
	VPDPWSSD Z16, Z21, Z6
	VPDPWSSD Z17, Z21, Z7
	VPBROADCASTD (R8)(DX*1), Z22
	VPDPWSSD Z16, Z22, Z8
	VPDPWSSD Z17, Z22, Z9
	VPBROADCASTD (R8)(DX*2), Z23
	VPDPWSSD Z16, Z23, Z10
	VPDPWSSD Z17, Z23, Z11
	VPBROADCASTD (R9), Z24
	VPDPWSSD Z16, Z24, Z12
	VPDPWSSD Z17, Z24, Z13
	VPBROADCASTD (R9)(DX*1), Z25
	VPDPWSSD Z16, Z25, Z14
	VPDPWSSD Z17, Z25, Z15
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $4, R9
	ADDQ $64, DI
	DECQ CX
	JNZ  loop

	VMOVUPS (R12), Z26
	VMOVUPS 64(R12), Z27
	VMOVUPS (R13), Z28
	VMOVUPS 64(R13), Z29
	VBROADCASTSS 0(BX), Z30
	VMULPS       Z30, Z26, Z31
	VCVTDQ2PS    Z0, Z0
	VFMADD213PS  Z28, Z31, Z0
	VMOVUPS      Z0, (R10)
	VMULPS       Z30, Z27, Z31
	VCVTDQ2PS    Z1, Z1
	VFMADD213PS  Z29, Z31, Z1
	VMOVUPS      Z1, 64(R10)
	ADDQ         R11, R10
	VBROADCASTSS 4(BX), Z30
	VMULPS       Z30, Z26, Z31
	VCVTDQ2PS    Z2, Z2
	VFMADD213PS  Z28, Z31, Z2
	VMOVUPS      Z2, (R10)
	VMULPS       Z30, Z27, Z31
	VCVTDQ2PS    Z3, Z3
	VFMADD213PS  Z29, Z31, Z3
	VMOVUPS      Z3, 64(R10)
	ADDQ         R11, R10
	VBROADCASTSS 8(BX), Z30
	VMULPS       Z30, Z26, Z31
	VCVTDQ2PS    Z4, Z4
	VFMADD213PS  Z28, Z31, Z4
	VMOVUPS      Z4, (R10)
	VMULPS       Z30, Z27, Z31
	VCVTDQ2PS    Z5, Z5
	VFMADD213PS  Z29, Z31, Z5
	VMOVUPS      Z5, 64(R10)
	ADDQ         R11, R10
	VBROADCASTSS 12(BX), Z30
	VMULPS       Z30, Z26, Z31
	VCVTDQ2PS    Z6, Z6
	VFMADD213PS  Z28, Z31, Z6
	VMOVUPS      Z6, (R10)
	VMULPS       Z30, Z27, Z31
	VCVTDQ2PS    Z7, Z7
	VFMADD213PS  Z29, Z31, Z7
	VMOVUPS      Z7, 64(R10)
	ADDQ         R11, R10
	VBROADCASTSS 16(BX), Z30
	VMULPS       Z30, Z26, Z31
	VCVTDQ2PS    Z8, Z8
	VFMADD213PS  Z28, Z31, Z8
	VMOVUPS      Z8, (R10)
	VMULPS       Z30, Z27, Z31
	VCVTDQ2PS    Z9, Z9
	VFMADD213PS  Z29, Z31, Z9
	VMOVUPS      Z9, 64(R10)
	ADDQ         R11, R10
	VBROADCASTSS 20(BX), Z30
	VMULPS       Z30, Z26, Z31
	VCVTDQ2PS    Z10, Z10
	VFMADD213PS  Z28, Z31, Z10
	VMOVUPS      Z10, (R10)
	VMULPS       Z30, Z27, Z31
	VCVTDQ2PS    Z11, Z11
	VFMADD213PS  Z29, Z31, Z11
	VMOVUPS      Z11, 64(R10)
	ADDQ         R11, R10
	VBROADCASTSS 24(BX), Z30
	VMULPS       Z30, Z26, Z31
	VCVTDQ2PS    Z12, Z12
	VFMADD213PS  Z28, Z31, Z12
	VMOVUPS      Z12, (R10)
	VMULPS       Z30, Z27, Z31
	VCVTDQ2PS    Z13, Z13
	VFMADD213PS  Z29, Z31, Z13
	VMOVUPS      Z13, 64(R10)
	ADDQ         R11, R10
	VBROADCASTSS 28(BX), Z30
	VMULPS       Z30, Z26, Z31
	VCVTDQ2PS    Z14, Z14
	VFMADD213PS  Z28, Z31, Z14
	VMOVUPS      Z14, (R10)
	VMULPS       Z30, Z27, Z31
	VCVTDQ2PS    Z15, Z15
	VFMADD213PS  Z29, Z31, Z15
	VMOVUPS      Z15, 64(R10)
	VZEROUPPER
	RET

// func int8Tile4x32(a *int16, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, c *float32, ldc int)
//
// int8Tile8x32 for four rows: a product's last rows when four or fewer
// are left (a question is a tile and a few rows), which the eight-row tile
// would multiply padded with zeros.
TEXT ·int8Tile4x32(SB), NOSPLIT, $0-72
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), DX
	MOVQ rowScale+16(FP), BX
	MOVQ b+24(FP), DI
	MOVQ steps+32(FP), CX
	MOVQ colScale+40(FP), R12
	MOVQ bias+48(FP), R13
	MOVQ c+56(FP), R10
	MOVQ ldc+64(FP), R11
	SHLQ $2, R11
	LEAQ (SI)(DX*2), R8
	ADDQ DX, R8

	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	VPXORD Z2, Z2, Z2
	VPXORD Z3, Z3, Z3
	VPXORD Z4, Z4, Z4
	VPXORD Z5, Z5, Z5
	VPXORD Z6, Z6, Z6
	VPXORD Z7, Z7, Z7

loop4:
	VPMOVSXBW (DI), Z16
	VPMOVSXBW 32(DI), Z17
	VPBROADCASTD (SI), Z18
	VPDPWSSD Z16, Z18, Z0
	VPDPWSSD Z17, Z18, Z1
	VPBROADCASTD (SI)(DX*1), Z19
	VPDPWSSD Z16, Z19, Z2
	VPDPWSSD Z17, Z19, Z3
	VPBROADCASTD (SI)(DX*2), Z20
	VPDPWSSD Z16, Z20, Z4
	VPDPWSSD Z17, Z20, Z5
	VPBROADCASTD (R8), Z21
	VPDPWSSD Z16, Z21, Z6
	VPDPWSSD Z17, Z21, Z7
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $64, DI
	DECQ CX
	JNZ  loop4

	VMOVUPS (R12), Z26
	VMOVUPS 64(R12), Z27
	VMOVUPS (R13), Z28
	VMOVUPS 64(R13), Z29
	VBROADCASTSS 0(BX), Z30
	VMULPS       Z30, Z26, Z31
	VCVTDQ2PS    Z0, Z0
	VFMADD213PS  Z28, Z31, Z0
	VMOVUPS      Z0, (R10)
	VMULPS       Z30, Z27, Z31
	VCVTDQ2PS    Z1, Z1
	VFMADD213PS  Z29, Z31, Z1
	VMOVUPS      Z1, 64(R10)
	ADDQ         R11, R10
	VBROADCASTSS 4(BX), Z30
	VMULPS       Z30, Z26, Z31
	VCVTDQ2PS    Z2, Z2
	VFMADD213PS  Z28, Z31, Z2
	VMOVUPS      Z2, (R10)
	VMULPS       Z30, Z27, Z31
	VCVTDQ2PS    Z3, Z3
	VFMADD213PS  Z29, Z31, Z3
	VMOVUPS      Z3, 64(R10)
	ADDQ         R11, R10
	VBROADCASTSS 8(BX), Z30
	VMULPS       Z30, Z26, Z31
	VCVTDQ2PS    Z4, Z4
	VFMADD213PS  Z28, Z31, Z4
	VMOVUPS      Z4, (R10)
	VMULPS       Z30, Z27, Z31
	VCVTDQ2PS    Z5, Z5
	VFMADD213PS  Z29, Z31, Z5
	VMOVUPS      Z5, 64(R10)
	ADDQ         R11, R10
	VBROADCASTSS 12(BX), Z30
	VMULPS       Z30, Z26, Z31
	VCVTDQ2PS    Z6, Z6
	VFMADD213PS  Z28, Z31, Z6
	VMOVUPS      Z6, (R10)
	VMULPS       Z30, Z27, Z31
	VCVTDQ2PS    Z7, Z7
	VFMADD213PS  Z29, Z31, Z7
	VMOVUPS      Z7, 64(R10)
	VZEROUPPER
	RET

// func maxAbs16(x *float32, n int) float32
//
// The largest |x[i]| for i < n, n a positive multiple of 16.
TEXT ·maxAbs16(SB), NOSPLIT, $0-20
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	SHRQ         $4, CX
	MOVL         $0x7fffffff, AX
	VPBROADCASTD AX, Z1
	VPXORD       Z0, Z0, Z0

maxloop:
	VANDPS (SI), Z1, Z2
	VMAXPS Z2, Z0, Z0
	ADDQ   $64, SI
	DECQ   CX
	JNZ    maxloop

	VEXTRACTF32X8 $1, Z0, Y1
	VMAXPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VMAXPS        X1, X0, X0
	VPERMILPS     $0x4e, X0, X1
	VMAXPS        X1, X0, X0
	VPERMILPS     $0xb1, X0, X1
	VMAXPS        X1, X0, X0
	VMOVSS        X0, ret+16(FP)
	VZEROUPPER
	RET

// func quantise16(dst *int16, x *float32, n int, inv float32)
//
// dst[i] = round(x[i]·inv) for i < n, n a positive multiple of 16,
// rounding halves to even (the processor's default); |x[i]·inv| < 2¹⁵.
TEXT ·quantise16(SB), NOSPLIT, $0-28
	MOVQ         dst+0(FP), DI
	MOVQ         x+8(FP), SI
	MOVQ         n+16(FP), CX
	SHRQ         $4, CX
	VBROADCASTSS inv+24(FP), Z1

qloop:
	VMULPS    (SI), Z1, Z0
	VCVTPS2DQ Z0, Z0
	VPMOVDW   Z0, Y0
	VMOVDQU   Y0, (DI)
	ADDQ      $64, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       qloop
	VZEROUPPER
	RET
