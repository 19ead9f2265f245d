package cuda

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/kernels"
)

// writePTXDir writes files (module name → text) into a fresh folder.
func writePTXDir(t *testing.T, files map[string][]byte) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), src, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// residualSum runs ResidualLayerNormForward on one row of 1s and 2s and returns the
// residual stream it wrote (1+2 = 3 by the committed kernel).
func residualSum(t *testing.T, b *Backend) float32 {
	t.Helper()
	const C = 8
	alloc := func(v float32) kernels.Tensor {
		x, err := b.Alloc("test", kernels.Float32, C)
		if err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4*C)
		for i := range C {
			binary.LittleEndian.PutUint32(buf[4*i:], math.Float32bits(v))
		}
		b.Upload(x, buf)
		return x
	}
	res, out, mean, rstd := alloc(0), alloc(0), alloc(0), alloc(0)
	b.ResidualLayerNormForward(res, out, mean, rstd, alloc(1), alloc(2), alloc(1), alloc(0), 1, C)
	got := make([]byte, 4*C)
	b.Download(got, res)
	return math.Float32frombits(binary.LittleEndian.Uint32(got))
}

// TestPTXDirReplacesModule: a module in Options.PTXDir is what runs (a layernorm.ptx
// whose residual add is a subtraction gives 1-2), the backend's name says so, and the
// other modules stay the embedded ones.
func TestPTXDirReplacesModule(t *testing.T) {
	src, err := ptxFS.ReadFile("ptx/layernorm.ptx")
	if err != nil {
		t.Fatal(err)
	}
	sub, err := mutate(src, "residual_layernorm_forward_f32", "add.rn.f32", "sub.rn.f32", 0)
	if err != nil {
		t.Fatal(err)
	}
	dir := writePTXDir(t, map[string][]byte{"layernorm.ptx": sub})
	embedded := openSim(t, FP32, SimOptions{})
	if got := residualSum(t, embedded); got != 3 {
		t.Fatalf("the embedded kernel: 1+2 = %v", got)
	}
	b, err := Open(Options{Precision: FP32, Sim: &SimOptions{Memory: 1 << 30}, PTXDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if got := residualSum(t, b); got != -1 {
		t.Errorf("with the replaced module: 1+2 = %v, want -1 (its add made a sub)", got)
	}
	if want := "layernorm.ptx from " + dir; !strings.Contains(b.Name(), want) {
		t.Errorf("name %q does not say %q", b.Name(), want)
	}
	if strings.Contains(embedded.Name(), " from ") {
		t.Errorf("the embedded backend's name %q names a folder", embedded.Name())
	}
}

// TestPTXDirEnv: $GPTKIT_PTX_DIR stands in for an empty Options.PTXDir.
func TestPTXDirEnv(t *testing.T) {
	src, err := ptxFS.ReadFile("ptx/reduce.ptx")
	if err != nil {
		t.Fatal(err)
	}
	dir := writePTXDir(t, map[string][]byte{"reduce.ptx": src})
	t.Setenv(ptxDirEnv, dir)
	b := openSim(t, FP32, SimOptions{})
	if want := "reduce.ptx from " + dir; !strings.Contains(b.Name(), want) {
		t.Errorf("name %q does not say %q", b.Name(), want)
	}
}

// TestPTXDirErrors: what Open says of a folder it cannot use, naming the file and
// what is wrong.
func TestPTXDirErrors(t *testing.T) {
	attn, err := ptxFS.ReadFile("ptx/attention.ptx")
	if err != nil {
		t.Fatal(err)
	}
	lacking := strings.Replace(string(attn), ".visible .entry flash_forward_bf16_64(", ".visible .entry flash_forward_bf16_64_old(", 1)
	for _, tc := range []struct {
		name  string
		files map[string][]byte
		want  []string
	}{
		{"empty folder", nil, []string{ptxDirEnv, "no .ptx file there"}},
		{"unknown module", map[string][]byte{"attn.ptx": attn}, []string{"attn.ptx", "no module of this build", "attention.ptx"}},
		{"a kernel missing", map[string][]byte{"attention.ptx": []byte(lacking)}, []string{"attention.ptx", "lacks the kernel flash_forward_bf16_64 "}},
		{"not PTX", map[string][]byte{"attention.ptx": append(attn[:len(attn):len(attn)], "\nnot an instruction;\n"...)},
			[]string{"attention.ptx", ptxDirEnv, "loading"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := writePTXDir(t, tc.files)
			b, err := Open(Options{Precision: FP32, Sim: &SimOptions{Memory: 1 << 30}, PTXDir: dir})
			if err == nil {
				b.Close()
				t.Fatal("Open succeeded")
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
