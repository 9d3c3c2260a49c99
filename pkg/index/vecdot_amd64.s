//go:build !purego

#include "textflag.h"

// Both kernels keep four sums of 8 lanes (Y0-Y3), take 32 values a step
// into them, then 8 a step into the first; n is a multiple of 8. They end
// alike: the four sums' 32 lanes added into X0's first.
#define ADD_SUMS \
	VADDPS       Y1, Y0, Y0 \
	VADDPS       Y3, Y2, Y2 \
	VADDPS       Y2, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X1 \
	VADDPS       X1, X0, X0 \
	VHADDPS      X0, X0, X0 \
	VHADDPS      X0, X0, X0 \
	VZEROUPPER

#define ZERO_SUMS \
	VXORPS Y0, Y0, Y0 \
	VXORPS Y1, Y1, Y1 \
	VXORPS Y2, Y2, Y2 \
	VXORPS Y3, Y3, Y3

// func dotFloat32Kernel(a, b *float32, n int) float32
TEXT ·dotFloat32Kernel(SB), NOSPLIT, $0-28
	MOVQ a+0(FP), SI
	MOVQ b+8(FP), DI
	MOVQ n+16(FP), CX
	ZERO_SUMS

steps32:
	CMPQ        CX, $32
	JLT         steps8
	VMOVUPS     (DI), Y4
	VMOVUPS     32(DI), Y5
	VMOVUPS     64(DI), Y6
	VMOVUPS     96(DI), Y7
	VFMADD231PS (SI), Y4, Y0
	VFMADD231PS 32(SI), Y5, Y1
	VFMADD231PS 64(SI), Y6, Y2
	VFMADD231PS 96(SI), Y7, Y3
	ADDQ        $128, DI
	ADDQ        $128, SI
	SUBQ        $32, CX
	JMP         steps32

steps8:
	CMPQ        CX, $8
	JLT         done
	VMOVUPS     (DI), Y4
	VFMADD231PS (SI), Y4, Y0
	ADDQ        $32, DI
	ADDQ        $32, SI
	SUBQ        $8, CX
	JMP         steps8

done:
	ADD_SUMS
	MOVSS X0, ret+24(FP)
	RET

// func dotInt8Kernel(q *float32, v *byte, n int) float32
//
// Each int8 is sign-extended to 32 bits and converted to float32 as it is
// loaded, then multiplied into its sum.
TEXT ·dotInt8Kernel(SB), NOSPLIT, $0-28
	MOVQ q+0(FP), SI
	MOVQ v+8(FP), DI
	MOVQ n+16(FP), CX
	ZERO_SUMS

steps32:
	CMPQ        CX, $32
	JLT         steps8
	VPMOVSXBD   (DI), Y4
	VPMOVSXBD   8(DI), Y5
	VPMOVSXBD   16(DI), Y6
	VPMOVSXBD   24(DI), Y7
	VCVTDQ2PS   Y4, Y4
	VCVTDQ2PS   Y5, Y5
	VCVTDQ2PS   Y6, Y6
	VCVTDQ2PS   Y7, Y7
	VFMADD231PS (SI), Y4, Y0
	VFMADD231PS 32(SI), Y5, Y1
	VFMADD231PS 64(SI), Y6, Y2
	VFMADD231PS 96(SI), Y7, Y3
	ADDQ        $32, DI
	ADDQ        $128, SI
	SUBQ        $32, CX
	JMP         steps32

steps8:
	CMPQ        CX, $8
	JLT         done
	VPMOVSXBD   (DI), Y4
	VCVTDQ2PS   Y4, Y4
	VFMADD231PS (SI), Y4, Y0
	ADDQ        $8, DI
	ADDQ        $32, SI
	SUBQ        $8, CX
	JMP         steps8

done:
	ADD_SUMS
	MOVSS X0, ret+24(FP)
	RET
