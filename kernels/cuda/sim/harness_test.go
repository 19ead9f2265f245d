package sim

import (
	"encoding/binary"
	"strings"
	"testing"
)

// The instruction tests run a PTX body once per thread: each thread loads
// in0[tid], in1[tid] and in2[tid] (64-bit words) into %a, %b and %c, runs the
// body, and stores %d to out[tid]. The body moves values in and out of typed
// registers itself (mov.b64 {%r1,%r2}, %a gives the two 32-bit halves).
const harness = `
.visible .entry k(.param .u64 out, .param .u64 in0, .param .u64 in1, .param .u64 in2)
{
	.reg .b64 %a, %b, %c, %d, %addr, %off, %base;
	.reg .b32 %tid, %lane;
	.reg .pred %p<8>;
	.reg .b32 %r<24>;
	.reg .b64 %rd<16>;
	.reg .f32 %f<16>;
	.reg .f64 %fd<16>;
	.reg .b16 %h<16>;
	DECLS
	mov.u32 %tid, %tid.x;
	mov.u32 %lane, %laneid;
	mul.wide.u32 %off, %tid, 8;
	ld.param.u64 %base, [in0];
	add.s64 %addr, %base, %off;
	ld.global.u64 %a, [%addr];
	ld.param.u64 %base, [in1];
	add.s64 %addr, %base, %off;
	ld.global.u64 %b, [%addr];
	ld.param.u64 %base, [in2];
	add.s64 %addr, %base, %off;
	ld.global.u64 %c, [%addr];
	mov.b64 %d, 0;
BODY
	ld.param.u64 %base, [out];
	add.s64 %addr, %base, %off;
	st.global.u64 [%addr], %d;
	ret;
}`

// runPTX runs body over len(in0) threads in one block (decls go before it:
// .shared variables) and returns each thread's %d.
func runPTX(t *testing.T, decls, body string, ins ...[]uint64) []uint64 {
	t.Helper()
	out, err := tryPTX(t, decls, body, ins...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func tryPTX(t *testing.T, decls, body string, ins ...[]uint64) ([]uint64, error) {
	t.Helper()
	n := len(ins[0])
	for len(ins) < 3 {
		ins = append(ins, make([]uint64, n))
	}
	d := NewDevice(Config{Seed: 7})
	src := ptxHeader + strings.Replace(strings.Replace(harness, "DECLS", decls, 1), "BODY", body, 1)
	m, err := Parse("instr.ptx", []byte(src))
	if err != nil {
		return nil, err
	}
	im, err := d.Load(m)
	if err != nil {
		return nil, err
	}
	k, _ := im.Kernel("k")
	var ptrs [4]uint64
	for i := 0; i < 4; i++ {
		a, _ := d.Mem.Allocate(8*n, "device")
		if i > 0 {
			for j, v := range ins[i-1] {
				binary.LittleEndian.PutUint64(a.Buf[8*j:], v)
			}
		}
		ptrs[i] = a.Base
	}
	if err := k.Launch(LaunchConfig{Grid: Dim3{1, 1, 1}, Block: Dim3{n, 1, 1}, Args: ptrs[:]}); err != nil {
		return nil, err
	}
	b, _ := d.Mem.Bytes(ptrs[0], 8*n)
	out := make([]uint64, n)
	for i := range out {
		out[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return out, nil
}

// lanes returns n words made by f.
func lanes(n int, f func(i int) uint64) []uint64 {
	x := make([]uint64, n)
	for i := range x {
		x[i] = f(i)
	}
	return x
}
