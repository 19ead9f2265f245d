package sim

import (
	"errors"
	"strings"
	"testing"
)

const ptxHeader = `.version 7.8
.target sm_80
.address_size 64
`

// launchFault loads src, launches kernel k with args over block threads and
// returns the fault.
func launchFault(t *testing.T, src, k string, grid, block int, args ...uint64) *Fault {
	t.Helper()
	d := newTestDev(t)
	kern := d.kernelText("planted.ptx", ptxHeader+src, k)
	err := kern.Launch(LaunchConfig{Grid: Dim3{grid, 1, 1}, Block: Dim3{block, 1, 1}, Args: args})
	var f *Fault
	if !errors.As(err, &f) {
		t.Fatalf("launch: %v, want a fault", err)
	}
	t.Logf("%v", f)
	return f
}

func wantIn(t *testing.T, msg string, parts ...string) {
	t.Helper()
	for _, p := range parts {
		if !strings.Contains(msg, p) {
			t.Errorf("%q does not say %q", msg, p)
		}
	}
}

func TestFaultOutOfBoundsStore(t *testing.T) {
	src := `
.visible .entry oob(.param .u64 p)
{
	.reg .b32 %r<3>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r1;
	ret;
}`
	d := newTestDev(t)
	buf := d.floats(make([]float32, 40)) // 40 floats: thread 40 of 64 is the first outside
	k := d.kernelText("planted.ptx", ptxHeader+src, "oob")
	err := k.Launch(LaunchConfig{Grid: Dim3{2, 1, 1}, Block: Dim3{64, 1, 1}, Args: []uint64{buf}})
	var f *Fault
	if !errors.As(err, &f) {
		t.Fatalf("%v, want a fault", err)
	}
	if f.Kernel != "oob" || f.Line != 13 || !f.HasThread || f.Thread != [3]int{40, 0, 0} || !f.HasAddr || f.Addr != buf+160 {
		t.Errorf("fault %+v: want kernel oob, line 13, thread (40,0,0), address %#x", f, buf+160)
	}
	wantIn(t, f.Error(), "kernel oob", "planted.ptx:13", "st.global.u32", "block (", "thread (40,0,0)", "out-of-bounds 4-byte write", "0 bytes past the end of the 160-byte")
}

func TestFaultMisaligned(t *testing.T) {
	src := `
.visible .entry mis(.param .u64 p)
{
	.reg .b32 %r<2>;
	.reg .b64 %rd<3>;
	ld.param.u64 %rd1, [p];
	ld.global.u32 %r1, [%rd1+2];
	st.global.u32 [%rd1], %r1;
	ret;
}`
	d := newTestDev(t)
	buf := d.floats(make([]float32, 4))
	k := d.kernelText("planted.ptx", ptxHeader+src, "mis")
	err := k.Launch(LaunchConfig{Grid: Dim3{1, 1, 1}, Block: Dim3{32, 1, 1}, Args: []uint64{buf}})
	var f *Fault
	if !errors.As(err, &f) {
		t.Fatalf("%v, want a fault", err)
	}
	wantIn(t, f.Error(), "misaligned 4-byte read", "thread (0,0,0)")
}

func TestFaultUninitializedShared(t *testing.T) {
	src := `
.visible .entry uninit(.param .u64 p)
{
	.shared .align 4 .b8 sh[256];
	.reg .b32 %r<7>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	shl.b32 %r2, %r1, 2;
	mov.u32 %r3, sh;
	add.s32 %r4, %r3, %r2;
	st.shared.u32 [%r4], %r1;       // each thread writes its own word
	bar.sync 0;
	ld.shared.u32 %r5, [%r4+4];     // and reads its neighbour's: the last thread's neighbour was never written
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r5;
	ret;
}`
	d := newTestDev(t)
	buf := d.floats(make([]float32, 48))
	k := d.kernelText("planted.ptx", ptxHeader+src, "uninit")
	err := k.Launch(LaunchConfig{Grid: Dim3{1, 1, 1}, Block: Dim3{48, 1, 1}, Args: []uint64{buf}})
	var f *Fault
	if !errors.As(err, &f) {
		t.Fatalf("%v, want a fault", err)
	}
	if f.Thread != [3]int{47, 0, 0} || f.Addr != 48*4 || f.Line != 17 {
		t.Errorf("fault %+v: want thread 47 at shared offset 192, line 17", f)
	}
	wantIn(t, f.Error(), "kernel uninit", "ld.shared.u32", "read of uninitialized shared memory")
}

// Without the bar.sync the same kernel reads words other warps have not
// written yet: the random warp order makes that a fault (in some block).
func TestFaultMissingBarrier(t *testing.T) {
	src := `
.visible .entry nobar(.param .u64 p)
{
	.shared .align 4 .b8 sh[512];
	.reg .b32 %r<8>;
	.reg .b64 %rd<4>;
	ld.param.u64 %rd1, [p];
	mov.u32 %r1, %tid.x;
	shl.b32 %r2, %r1, 2;
	mov.u32 %r3, sh;
	add.s32 %r4, %r3, %r2;
	st.shared.u32 [%r4], %r1;
	xor.b32 %r6, %r2, 128;          // the same lane of the other warp
	add.s32 %r7, %r3, %r6;
	ld.shared.u32 %r5, [%r7];
	mul.wide.u32 %rd2, %r1, 4;
	add.s64 %rd3, %rd1, %rd2;
	st.global.u32 [%rd3], %r5;
	ret;
}`
	d := newTestDev(t)
	buf := d.floats(make([]float32, 64))
	k := d.kernelText("planted.ptx", ptxHeader+src, "nobar")
	err := k.Launch(LaunchConfig{Grid: Dim3{1, 1, 1}, Block: Dim3{64, 1, 1}, Args: []uint64{buf}})
	var f *Fault
	if !errors.As(err, &f) {
		t.Fatalf("%v, want a fault", err)
	}
	wantIn(t, f.Error(), "read of uninitialized shared memory")
}

func TestFaultDivergentBarrier(t *testing.T) {
	// warp 0 branches around the barrier and exits; warp 1 waits at it
	src := `
.visible .entry divbar()
{
	.reg .pred %p<2>;
	.reg .b32 %r<2>;
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 32;
	@%p1 bra $L_done;
	bar.sync 0;
$L_done:
	ret;
}`
	f := launchFault(t, src, "divbar", 1, 64)
	wantIn(t, f.Error(), "kernel divbar", "planted.ptx:12", "bar.sync", "divergent barrier", "reached by 32 of the block's 64 threads", "exited without reaching it")

	// half of one warp skips it
	src = strings.Replace(src, "setp.lt.u32 %p1, %r1, 32;", "setp.lt.u32 %p1, %r1, 16;", 1)
	f = launchFault(t, src, "divbar", 1, 64)
	wantIn(t, f.Error(), "reached by 48 of the block's 64 threads")
}

func TestFaultShflMask(t *testing.T) {
	// lanes 0-15 shuffle with a full membermask while 16-31 went elsewhere
	src := `
.visible .entry shflmask()
{
	.reg .pred %p<3>;
	.reg .b32 %r<4>;
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p1, %r1, 16;
	@!%p1 bra $L_done;
	shfl.sync.bfly.b32 %r2|%p2, %r1, 1, 31, -1;
$L_done:
	ret;
}`
	f := launchFault(t, src, "shflmask", 1, 32)
	wantIn(t, f.Error(), "shfl.sync.bfly.b32", "membermask 0xffffffff names lane 16", "is not executing it")
}

func TestFaultUnknownInstruction(t *testing.T) {
	for _, c := range []struct{ src, want string }{
		{"frobnicate.b32 %r1, %r2;", `planted.ptx:10: kernel bad: frobnicate.b32: unknown instruction "frobnicate"`},
		{"add.sat.f64 %fd1, %fd1, %fd1;", "planted.ptx:10: kernel bad: add.sat.f64: .ftz and .sat are for .f32"},
		{"add.s32.lo %r1, %r2, %r2;", "unsupported modifier .lo"},
		{"mul.lo.u128 %r1, %r2, %r2;", "expected one type modifier"},
		{"ld.global.v8.f32 {%r1,%r1,%r1,%r1,%r1,%r1,%r1,%r1}, [%rd1];", "a 32-byte vector access"},
		{"bar.arrive 1, 64;", "bar.arrive (producer/consumer barriers) is not simulated"},
	} {
		src := `
.visible .entry bad()
{
	.reg .b32 %r<3>;
	.reg .f64 %fd<2>;
	.reg .b64 %rd<2>;
	` + c.src + `
	ret;
}`
		m, err := Parse("planted.ptx", []byte(ptxHeader+src))
		if err != nil {
			t.Fatal(err)
		}
		_, err = NewDevice(Config{}).Load(m)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.src, err, c.want)
		}
	}
}
