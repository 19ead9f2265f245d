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

func TestResidualForward(t *testing.T) {
	d := newTestDev(t)
	k := d.kernel("../ptx/elementwise.ptx", "residual_forward")
	n := 1000
	x, y := make([]float32, n), make([]float32, n)
	for i := range x {
		x[i], y[i] = float32(i), float32(2*i)+0.5
	}
	out := d.floats(make([]float32, n))
	err := k.Launch(LaunchConfig{Grid: Dim3{3, 1, 1}, Block: Dim3{256, 1, 1}, Args: []uint64{out, d.floats(x), d.floats(y), uint64(n)}})
	if err != nil {
		t.Fatal(err)
	}
	got := d.read(out, n)
	for i := range got {
		if got[i] != x[i]+y[i] {
			t.Fatalf("out[%d] = %v, want %v", i, got[i], x[i]+y[i])
		}
	}
	// out of bounds: n larger than the buffers
	err = k.Launch(LaunchConfig{Grid: Dim3{3, 1, 1}, Block: Dim3{256, 1, 1}, Args: []uint64{out, d.floats(x), d.floats(y), uint64(n + 1)}})
	t.Logf("oob: %v", err)
	if err == nil {
		t.Fatal("no fault")
	}
}
