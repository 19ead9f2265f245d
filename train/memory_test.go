package train

import (
	"strings"
	"testing"

	"gptkit/kernels"
	"gptkit/kernels/ref"
)

// deviceWith is a device backend (no HostMemory) with free bytes free.
type deviceWith struct {
	kernels.Backend
	free int64
}

func (d deviceWith) DeviceMemory() (free, total int64) { return d.free, d.free }

// TestCheckMemoryMessage: the pre-flight's refusal writes the need and the memory
// available precisely enough to differ (a need a few KiB over the free memory read
// "need 14.3 MiB ..., more than the 14.3 MiB available"), and its hint gives what
// applies to the run, as the allocation's out-of-memory error does: --zero 1 with
// several ranks and zero 0, --dtype bfloat16 for float32 on a device; it gave neither.
func TestCheckMemoryMessage(t *testing.T) {
	cfg := Default()
	cfg.NLayer, cfg.NHead, cfg.NEmbd, cfg.BlockSize, cfg.BatchSize = 2, 2, 64, 64, 4
	for _, tc := range []struct {
		world, zero int
		dt          kernels.DType
		host        bool
		want, not   []string
	}{
		{world: 2, dt: kernels.Float32, want: []string{"--zero 1", "--dtype bfloat16"}},
		{world: 2, zero: 1, dt: kernels.Float32, want: []string{"--dtype bfloat16"}, not: []string{"--zero 1"}},
		{world: 1, dt: kernels.BFloat16, not: []string{"--zero 1", "--dtype bfloat16"}},
		{world: 2, dt: kernels.Float32, host: true, want: []string{"--zero 1"}, not: []string{"--dtype bfloat16"}},
	} {
		cfg.Zero = tc.zero
		est := EstimateMemory(cfg, 65, tc.world, tc.dt)
		for _, short := range []float64{1, 3000, est.Total() / 10} { // a byte, a few KiB, a tenth short
			var be kernels.Backend = deviceWith{ref.New(), int64(est.Total() - short)}
			if tc.host {
				be = hostWith{deviceWith{ref.New(), int64(est.Total() - short)}}
			}
			err := CheckMemory(est, be)
			if err == nil {
				t.Fatalf("%+v, %.0f bytes short: accepted", tc, short)
			}
			msg := err.Error()
			need, rest, _ := strings.Cut(strings.TrimPrefix(msg, "train: the model and its training state need "), " (")
			_, rest, _ = strings.Cut(rest, "more than the ")
			avail, _, _ := strings.Cut(rest, " available")
			if need == "" || avail == "" || need == avail {
				t.Errorf("%.0f bytes short: need %q, available %q:\n%s", short, need, avail, msg)
			}
			_, hint, _ := strings.Cut(msg, "HINT:")
			for _, w := range tc.want {
				if !strings.Contains(hint, w) {
					t.Errorf("world %d zero %d %s host %v: the hint lacks %s:\n%s", tc.world, tc.zero, tc.dt, tc.host, w, msg)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(hint, w) {
					t.Errorf("world %d zero %d %s host %v: the hint gives %s, which does not apply:\n%s", tc.world, tc.zero, tc.dt, tc.host, w, msg)
				}
			}
		}
	}
}

// hostWith is a device-memory backend that computes in host memory.
type hostWith struct{ deviceWith }

func (hostWith) HostMemory() {}

// namedDevice is a device backend whose name depends on the dtype of its tensors,
// as kernels/cuda's does (the precision of its GEMMs).
type namedDevice struct{ deviceWith }

func (namedDevice) Name() string { return "dev(fp32 matmuls)" }

func (namedDevice) NameFor(dt kernels.DType) string {
	if dt == kernels.BFloat16 {
		return "dev(bf16 matmuls)"
	}
	return "dev(fp32 matmuls)"
}

// TestCheckMemoryNamesRunDType: the pre-flight names the device as the run will use
// it. It named it before any tensor existed, so a bfloat16 run on cuda-sim was
// refused as "free on the device (cuda(cuda-sim (simulated sm_80), fp32 matmuls))".
func TestCheckMemoryNamesRunDType(t *testing.T) {
	cfg := Default()
	cfg.NLayer, cfg.NHead, cfg.NEmbd, cfg.BlockSize, cfg.BatchSize = 2, 2, 64, 64, 4
	for dt, want := range map[kernels.DType]string{kernels.BFloat16: "bf16 matmuls", kernels.Float32: "fp32 matmuls"} {
		est := EstimateMemory(cfg, 65, 1, dt)
		err := CheckMemory(est, namedDevice{deviceWith{ref.New(), 1024}})
		if err == nil || !strings.Contains(err.Error(), "free on the device (dev("+want+"))") {
			t.Errorf("a %s run: %v, want the device named with %q", dt, err, want)
		}
	}
}
