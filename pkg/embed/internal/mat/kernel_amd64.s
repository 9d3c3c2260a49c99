//go:build !purego

#include "textflag.h"

// func tile6x16(a *float32, lda int, b *float32, k int, bias *float32, c *float32, ldc int)
//
// c[i][j] = bias[j] + Σ_t a[i·lda+t] · b[t·16+j], for i < 6, j < 16, t < k
// (k ≥ 1): six rows of activations times one packed panel of sixteen
// output columns. Twelve accumulators (six rows × two halves of the
// panel) stay in registers for the whole sum; each step loads the panel's
// sixteen weights once and broadcasts one value of each row.
TEXT ·tile6x16(SB), NOSPLIT, $0-56
	MOVQ a+0(FP), SI
	MOVQ lda+8(FP), DX
	SHLQ $2, DX
	MOVQ b+16(FP), DI
	MOVQ k+24(FP), CX
	MOVQ bias+32(FP), AX
	MOVQ c+40(FP), R10
	MOVQ ldc+48(FP), R11
	SHLQ $2, R11
	LEAQ (SI)(DX*2), R8
	LEAQ (R8)(DX*2), R9

	VMOVUPS (AX), Y0
	VMOVUPS 32(AX), Y1
	VMOVAPS Y0, Y2
	VMOVAPS Y1, Y3
	VMOVAPS Y0, Y4
	VMOVAPS Y1, Y5
	VMOVAPS Y0, Y6
	VMOVAPS Y1, Y7
	VMOVAPS Y0, Y8
	VMOVAPS Y1, Y9
	VMOVAPS Y0, Y10
	VMOVAPS Y1, Y11

loop:
	VMOVUPS (DI), Y12
	VMOVUPS 32(DI), Y13
	VBROADCASTSS (SI), Y14
	VFMADD231PS Y12, Y14, Y0
	VFMADD231PS Y13, Y14, Y1
	VBROADCASTSS (SI)(DX*1), Y15
	VFMADD231PS Y12, Y15, Y2
	VFMADD231PS Y13, Y15, Y3
	VBROADCASTSS (R8), Y14
	VFMADD231PS Y12, Y14, Y4
	VFMADD231PS Y13, Y14, Y5
	VBROADCASTSS (R8)(DX*1), Y15
	VFMADD231PS Y12, Y15, Y6
	VFMADD231PS Y13, Y15, Y7
	VBROADCASTSS (R9), Y14
	VFMADD231PS Y12, Y14, Y8
	VFMADD231PS Y13, Y14, Y9
	VBROADCASTSS (R9)(DX*1), Y15
	VFMADD231PS Y12, Y15, Y10
	VFMADD231PS Y13, Y15, Y11
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $4, R9
	ADDQ $64, DI
	DECQ CX
	JNZ  loop

	VMOVUPS Y0, (R10)
	VMOVUPS Y1, 32(R10)
	ADDQ    R11, R10
	VMOVUPS Y2, (R10)
	VMOVUPS Y3, 32(R10)
	ADDQ    R11, R10
	VMOVUPS Y4, (R10)
	VMOVUPS Y5, 32(R10)
	ADDQ    R11, R10
	VMOVUPS Y6, (R10)
	VMOVUPS Y7, 32(R10)
	ADDQ    R11, R10
	VMOVUPS Y8, (R10)
	VMOVUPS Y9, 32(R10)
	ADDQ    R11, R10
	VMOVUPS Y10, (R10)
	VMOVUPS Y11, 32(R10)
	VZEROUPPER
	RET
