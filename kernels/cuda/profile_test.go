package cuda

import (
	"bytes"
	"strings"
	"testing"

	"gptkit/kernels"
	"gptkit/train"
)

// TestProfileBabyStep profiles a training step of a small model on the
// simulated GPU: every kernel and GEMM the step issues is in the profile, with
// its calls, and the table prints.
func TestProfileBabyStep(t *testing.T) {
	for _, dt := range []kernels.DType{kernels.Float32, kernels.BFloat16} {
		t.Run(dt.String(), func(t *testing.T) { profileBabyStep(t, dt) })
	}
}

func profileBabyStep(t *testing.T, dt kernels.DType) {
	be := openSim(t, FP32, SimOptions{})
	B, T := 2, 16
	mc := train.ModelConfig{VocabSize: 65, PaddedVocab: 128, NLayer: 2, NHead: 2, NEmbd: 32, BlockSize: T}
	_, step := stepper(t, be, mc, dt, B, T, 0.99)
	step(1)
	before := map[string]int{}
	for k, v := range be.sim.launches {
		before[k] = v
	}
	p, err := be.Profile(func() { step(2) })
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int{}
	gemms := 0
	for _, o := range p.Ops {
		calls[o.Name] = o.Calls
		if strings.HasPrefix(o.Name, "gemm ") {
			gemms += o.Calls
		}
		if o.Millis < 0 {
			t.Errorf("%s: %v ms", o.Name, o.Millis)
		}
		if (o.FLOPs > 0) != (strings.HasPrefix(o.Name, "gemm ") || strings.HasPrefix(o.Name, "flash_")) {
			t.Errorf("%s: %v FLOPs", o.Name, o.FLOPs)
		}
	}
	for k, v := range be.sim.launches {
		if n := v - before[k]; n != calls[k] {
			t.Errorf("kernel %s launched %d times in the step, profiled %d", k, n, calls[k])
		}
	}
	// Per layer: qkv, attention projection, fc, fc projection forward (4) and
	// backward (8); the classifier's forward and backward (3).
	if want := mc.NLayer*12 + 3; gemms != want {
		t.Errorf("%d GEMMs profiled, want %d: %v", gemms, want, p.Ops)
	}
	if p.BusyMillis <= 0 || p.SpanMillis < p.BusyMillis*0.5 || p.HostMillis <= 0 {
		t.Errorf("busy %v, span %v, host %v ms", p.BusyMillis, p.SpanMillis, p.HostMillis)
	}
	var buf bytes.Buffer
	p.Write(&buf)
	want := "gelu_backward_inplace_f32" // float32 keeps cuBLASLt's DGELU out
	if dt == kernels.BFloat16 {
		want = "flash_backward_dq_bf16_16"
	}
	if !strings.Contains(buf.String(), want) || !strings.Contains(buf.String(), "busy ") {
		t.Errorf("table:\n%s", buf.String())
	}
	t.Logf("\n%s", buf.String())

	// A panic in the profiled work ends the profile: the next one runs.
	func() {
		defer func() { _ = recover() }()
		_, _ = be.Profile(func() { step(3); panic("in the profiled work") })
	}()
	if be.prof != nil {
		t.Fatal("a panic left the profile on")
	}

	// Nothing is recorded after the profile, and a nested one is refused.
	step(3)
	if _, err := be.Profile(func() {
		if _, err := be.Profile(func() {}); err == nil {
			t.Error("a profile inside a profile ran")
		}
	}); err != nil {
		t.Fatal(err)
	}
}

// TestSimEventElapsed: timing events give the time between their records;
// events without timing, or not yet reached, are refused as CUDA refuses them.
func TestSimEventElapsed(t *testing.T) {
	d := newSimDriver(SimOptions{})
	a, _ := d.timingEventCreate()
	b, _ := d.timingEventCreate()
	plain, _ := d.eventCreate()
	if _, err := d.eventElapsed(a, b); err == nil || !strings.Contains(err.Error(), "not yet reached") {
		t.Errorf("unrecorded events: %v", err)
	}
	if err := d.eventRecord(a, 0); err != nil {
		t.Fatal(err)
	}
	if err := d.eventRecord(b, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := d.eventElapsed(a, b); err == nil {
		t.Error("events recorded but not reached (stream not run): no error")
	}
	if err := d.eventSynchronize(b); err != nil {
		t.Fatal(err)
	}
	if ms, err := d.eventElapsed(a, b); err != nil || ms < 0 {
		t.Errorf("elapsed %v, %v", ms, err)
	}
	if err := d.eventRecord(plain, 0); err != nil {
		t.Fatal(err)
	}
	if err := d.eventSynchronize(plain); err != nil {
		t.Fatal(err)
	}
	if _, err := d.eventElapsed(a, plain); err == nil || !strings.Contains(err.Error(), "DISABLE_TIMING") {
		t.Errorf("an event without timing: %v", err)
	}
}
