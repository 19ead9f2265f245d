package sim

import (
	"encoding/binary"
	"math"
	"os"
	"testing"
)

// testDev is a device with helpers to move float32s in and out.
type testDev struct {
	*Device
	t *testing.T
}

func newTestDev(t *testing.T) *testDev {
	return &testDev{NewDevice(Config{Seed: 42}), t}
}

func (d *testDev) floats(x []float32) uint64 {
	a, err := d.Mem.Allocate(4*len(x), "device")
	if err != nil {
		d.t.Fatal(err)
	}
	for i, v := range x {
		binary.LittleEndian.PutUint32(a.Buf[4*i:], math.Float32bits(v))
	}
	return a.Base
}

func (d *testDev) read(addr uint64, n int) []float32 {
	b, err := d.Mem.Bytes(addr, 4*n)
	if err != nil {
		d.t.Fatal(err)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func (d *testDev) kernel(file, name string) *Kernel {
	src, err := os.ReadFile(file)
	if err != nil {
		d.t.Fatal(err)
	}
	return d.kernelText(file, string(src), name)
}

func (d *testDev) kernelText(file, src, name string) *Kernel {
	m, err := Parse(file, []byte(src))
	if err != nil {
		d.t.Fatal(err)
	}
	im, err := d.Load(m)
	if err != nil {
		d.t.Fatal(err)
	}
	k, err := im.Kernel(name)
	if err != nil {
		d.t.Fatal(err)
	}
	return k
}

// A committed kernel on the simulator: convert_f32_bf16 rounds to nearest even,
// and a launch over more elements than the buffers hold faults.
func TestConvertToBF16(t *testing.T) {
	d := newTestDev(t)
	k := d.kernel("../ptx/elementwise.ptx", "convert_f32_bf16")
	n := 1000
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(i)*1.0039 - 300 // not representable in bfloat16: rounds
	}
	x[0] = math.Float32frombits(0x3f808000) // a tie: to even (0x3f80)
	x[1] = math.Float32frombits(0x3f818000) // a tie: to even (0x3f82)
	out := d.floats(make([]float32, (n+1)/2))
	err := k.Launch(LaunchConfig{Grid: Dim3{3, 1, 1}, Block: Dim3{256, 1, 1}, Args: []uint64{out, d.floats(x), uint64(n)}})
	if err != nil {
		t.Fatal(err)
	}
	b, err := d.Mem.Bytes(out, 2*n)
	if err != nil {
		t.Fatal(err)
	}
	for i := range x {
		if got, want := binary.LittleEndian.Uint16(b[2*i:]), ToBF16(x[i]); got != want {
			t.Fatalf("out[%d] = %#x, want %#x (of %v)", i, got, want, x[i])
		}
	}
	if got := binary.LittleEndian.Uint16(b); got != 0x3f80 {
		t.Errorf("tie rounded to %#x, want 0x3f80", got)
	}
	if got := binary.LittleEndian.Uint16(b[2:]); got != 0x3f82 {
		t.Errorf("tie rounded to %#x, want 0x3f82", got)
	}
	// out of bounds: n larger than the buffers
	err = k.Launch(LaunchConfig{Grid: Dim3{3, 1, 1}, Block: Dim3{256, 1, 1}, Args: []uint64{out, d.floats(x), uint64(n + 1)}})
	t.Logf("oob: %v", err)
	if err == nil {
		t.Fatal("no fault")
	}
}
