//go:build !purego

#include "textflag.h"

DATA geluConst<>+0(SB)/4, $0x41000000
DATA geluConst<>+4(SB)/4, $0xc1000000
DATA geluConst<>+8(SB)/4, $0x44800000
DATA geluConst<>+12(SB)/4, $0x40ffffff
GLOBL geluConst<>(SB), RODATA|NOPTR, $16

// func gelu8(x *float32, n int, table *float32)
//
// GELU's arithmetic eight lanes wide, n a positive multiple of 8: inside
// (-8, 8), the table's two entries either side of x gathered and
// interpolated; at -8 and below 0; at 8 and above, and NaN, x as it is.
// The index comes from x held inside the table (NaN held too), so no lane
// reads past it.
TEXT ·gelu8(SB), NOSPLIT, $0-24
	MOVQ         x+0(FP), SI
	MOVQ         n+8(FP), CX
	SHRQ         $3, CX
	MOVQ         table+16(FP), DI
	VBROADCASTSS geluConst<>+0(SB), Y15  // 8, the table's edge
	VBROADCASTSS geluConst<>+4(SB), Y14  // -8
	VBROADCASTSS geluConst<>+8(SB), Y13  // 1024 steps a unit
	VBROADCASTSS geluConst<>+12(SB), Y12 // the largest float32 below 8

geluloop:
	VMOVUPS     (SI), Y0
	VMAXPS      Y14, Y0, Y1      // a NaN lane takes -8
	VMINPS      Y12, Y1, Y1
	VADDPS      Y15, Y1, Y1
	VMULPS      Y13, Y1, Y1      // f = (x+8)·1024, in [0, 16384)
	VCVTTPS2DQ  Y1, Y2           // j
	VCVTDQ2PS   Y2, Y3
	VSUBPS      Y3, Y1, Y1       // f - j
	VPCMPEQD    Y4, Y4, Y4
	VGATHERDPS  Y4, (DI)(Y2*4), Y5
	VPCMPEQD    Y4, Y4, Y4
	VGATHERDPS  Y4, 4(DI)(Y2*4), Y6
	VSUBPS      Y5, Y6, Y6
	VFMADD231PS Y6, Y1, Y5       // t[j] + (f-j)·(t[j+1]-t[j])
	VCMPPS      $0x11, Y15, Y0, Y7 // x < 8
	VCMPPS      $0x1e, Y14, Y0, Y8 // x > -8
	VANDPS      Y8, Y7, Y7         // inside the table
	VCMPPS      $0x12, Y14, Y0, Y9 // x ≤ -8
	VORPS       Y9, Y7, Y9
	VANDNPS     Y0, Y9, Y10        // x where neither
	VANDPS      Y7, Y5, Y5
	VORPS       Y10, Y5, Y5
	VMOVUPS     Y5, (SI)
	ADDQ        $32, SI
	DECQ        CX
	JNZ         geluloop
	VZEROUPPER
	RET
