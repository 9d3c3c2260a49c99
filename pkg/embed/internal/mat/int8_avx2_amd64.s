//go:build !purego

#include "textflag.h"

// The int8 tiles for processors with AVX2 but not AVX-512 VNNI (AMD before
// Zen 4, Intel client cores before 2021): 16 registers of 256 bits, and no
// instruction that multiplies and adds into an accumulator in one. Each
// step widens a half panel's int8 weights to 16 bits (VPMOVSXBW), multiplies
// them by a row's pair of 16-bit activations into 32-bit sums of two
// (VPMADDWD: exact, as VPDPWSSD's) and adds those (VPADDD). The sums, and
// so the results, are the VNNI 16-bit tiles'.

// A step of one row: its next two activations (four bytes at addr),
// broadcast to Y14, times the half panel's two quarters (Y12, Y13), added
// into the row's two accumulators through Y15.
#define WORDS_ROW2(addr, acc0, acc1) \
	VPBROADCASTD addr, Y14; \
	VPMADDWD Y12, Y14, Y15; VPADDD Y15, acc0, acc0; \
	VPMADDWD Y13, Y14, Y15; VPADDD Y15, acc1, acc1

// The end of one row: its sums as floats, times the row's scale (at
// off(BX)) and the columns' (at R12), plus the bias (at R13), stored at
// R10, which moves on to the next row.
#define STORE_ROW2(off, acc0, acc1) \
	VBROADCASTSS off(BX), Y14; \
	VMULPS (R12), Y14, Y15; VCVTDQ2PS acc0, acc0; VFMADD213PS (R13), Y15, acc0; VMOVUPS acc0, (R10); \
	VMULPS 32(R12), Y14, Y15; VCVTDQ2PS acc1, acc1; VFMADD213PS 32(R13), Y15, acc1; VMOVUPS acc1, 32(R10); \
	ADDQ R11, R10

#define ARGS2 \
	MOVQ a+0(FP), SI; MOVQ lda+8(FP), DX; MOVQ rowScale+16(FP), BX; MOVQ b+24(FP), DI; \
	MOVQ steps+32(FP), CX; MOVQ colScale+40(FP), R12; MOVQ bias+48(FP), R13; \
	MOVQ c+56(FP), R10; MOVQ ldc+64(FP), R11; SHLQ $2, R11

// func int8Tile6x16(a *int16, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, c *float32, ldc int)
//
// c[i][j] = (Σ_t a[i·lda+t]·w[t][j]) · rowScale[i] · colScale[j] + bias[j],
// for i < 6, j < 16, t < 2·steps (steps ≥ 1): six rows of 16-bit
// activations times half of a panel (b points at its first column; the
// panel's steps are 64 bytes apart, two inputs of thirty-two columns).
// Twelve accumulators, the two quarters' weights, a broadcast and a
// product take all sixteen registers. lda is in bytes.
TEXT ·int8Tile6x16(SB), NOSPLIT, $0-72
	ARGS2
	LEAQ (SI)(DX*2), R8
	ADDQ DX, R8

	VPXOR Y0, Y0, Y0; VPXOR Y1, Y1, Y1; VPXOR Y2, Y2, Y2; VPXOR Y3, Y3, Y3
	VPXOR Y4, Y4, Y4; VPXOR Y5, Y5, Y5; VPXOR Y6, Y6, Y6; VPXOR Y7, Y7, Y7
	VPXOR Y8, Y8, Y8; VPXOR Y9, Y9, Y9; VPXOR Y10, Y10, Y10; VPXOR Y11, Y11, Y11

loop6:
	VPMOVSXBW (DI), Y12
	VPMOVSXBW 16(DI), Y13
	WORDS_ROW2((SI), Y0, Y1)
	WORDS_ROW2((SI)(DX*1), Y2, Y3)
	WORDS_ROW2((SI)(DX*2), Y4, Y5)
	WORDS_ROW2((R8), Y6, Y7)
	WORDS_ROW2((R8)(DX*1), Y8, Y9)
	WORDS_ROW2((R8)(DX*2), Y10, Y11)
	ADDQ $4, SI
	ADDQ $4, R8
	ADDQ $64, DI
	DECQ CX
	JNZ  loop6

	STORE_ROW2(0, Y0, Y1)
	STORE_ROW2(4, Y2, Y3)
	STORE_ROW2(8, Y4, Y5)
	STORE_ROW2(12, Y6, Y7)
	STORE_ROW2(16, Y8, Y9)
	STORE_ROW2(20, Y10, Y11)
	VZEROUPPER
	RET

// func int8Tile3x16(a *int16, lda int, rowScale *float32, b *int8, steps int, colScale *float32, bias *float32, c *float32, ldc int)
//
// int8Tile6x16 for three rows: a product's last rows when three or fewer
// are left.
TEXT ·int8Tile3x16(SB), NOSPLIT, $0-72
	ARGS2

	VPXOR Y0, Y0, Y0; VPXOR Y1, Y1, Y1; VPXOR Y2, Y2, Y2
	VPXOR Y3, Y3, Y3; VPXOR Y4, Y4, Y4; VPXOR Y5, Y5, Y5

loop3:
	VPMOVSXBW (DI), Y12
	VPMOVSXBW 16(DI), Y13
	WORDS_ROW2((SI), Y0, Y1)
	WORDS_ROW2((SI)(DX*1), Y2, Y3)
	WORDS_ROW2((SI)(DX*2), Y4, Y5)
	ADDQ $4, SI
	ADDQ $64, DI
	DECQ CX
	JNZ  loop3

	STORE_ROW2(0, Y0, Y1)
	STORE_ROW2(4, Y2, Y3)
	STORE_ROW2(8, Y4, Y5)
	VZEROUPPER
	RET
