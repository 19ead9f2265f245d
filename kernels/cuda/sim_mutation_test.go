package cuda

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"gptkit/kernels"
	"gptkit/kernels/kerneltest"
)

// The simulator runs what is committed: each mutation below changes one
// instruction of a committed kernel's PTX, and the conformance suite must then
// fail (a wrong result, or a fault the simulator raises).
var mutations = []struct {
	name, module, kernel string
	from, to             string // the instruction text, and what replaces it ("" removes it)
	nth                  int    // which occurrence in the kernel (0 the first)
}{
	{"residual_layernorm_forward_f32's residual add made sub.rn.f32", "layernorm.ptx", "residual_layernorm_forward_f32", "add.rn.f32", "sub.rn.f32", 0},
	{"classifier_rows_f32 without its second bar.sync", "classifier.ptx", "classifier_rows_f32", "bar.sync", "", 1},
	{"classifier_rows_bf16 without the bar.sync between its reductions", "classifier.ptx", "classifier_rows_bf16", "bar.sync", "", 2},
	{"sum_squares_chunks_f32 without its bar.sync", "reduce.ptx", "sum_squares_chunks_f32", "bar.sync", "", 0},
	{"layernorm_forward_f32's variance shuffle reads the wrong lane", "layernorm.ptx", "layernorm_forward_f32", "shfl.sync.bfly.b32", "shfl.sync.idx.b32", 5},
	// the tensor-core attention: the barrier after a K/V tile's cp.async lands
	{"flash_forward_bf16_64 without the bar.sync after loading K and V", "attention.ptx", "flash_forward_bf16_64", "bar.sync", "", 2},
	{"flash_backward_dkdv_bf16_64's first mma.sync removed", "attention.ptx", "flash_backward_dkdv_bf16_64", "mma.sync", "", 0},
}

// mutate returns src with the nth occurrence of instruction from in kernel's
// body replaced by to (a removed instruction leaves an empty line, so line
// numbers stay).
func mutate(src []byte, kernel, from, to string, nth int) ([]byte, error) {
	lines := strings.Split(string(src), "\n")
	in := false
	for i, l := range lines {
		if strings.HasPrefix(l, ".visible .entry ") {
			in = strings.HasPrefix(l, ".visible .entry "+kernel+"(")
		}
		t := strings.TrimSpace(l)
		if !in || !strings.HasPrefix(t, from) {
			continue
		}
		if nth > 0 {
			nth--
			continue
		}
		if to == "" {
			lines[i] = ""
		} else {
			lines[i] = strings.Replace(l, from, to, 1)
		}
		return []byte(strings.Join(lines, "\n")), nil
	}
	return nil, fmt.Errorf("no %s in %s", from, kernel)
}

const mutantEnv = "GPTKIT_SIM_MUTANT"

// TestSimMutant is the child of TestSimMutationsFail: the conformance suite on
// a simulated GPU whose PTX carries mutation $GPTKIT_SIM_MUTANT.
func TestSimMutant(t *testing.T) {
	v := os.Getenv(mutantEnv)
	if v == "" {
		t.Skip("run by TestSimMutationsFail")
	}
	i, _ := strconv.Atoi(v)
	mu := mutations[i]
	b := openSim(t, FP32, SimOptions{Seed: 3, PatchPTX: func(name string, src []byte) []byte {
		if name != mu.module {
			return src
		}
		out, err := mutate(src, mu.kernel, mu.from, mu.to, mu.nth)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}})
	kerneltest.Conformance(t, func() kernels.Backend { return b })
}

// TestSimMutationsFail runs the conformance suite on each mutated kernel (in a
// child process: a fault ends it) and demands that it fails.
func TestSimMutationsFail(t *testing.T) {
	if os.Getenv(mutantEnv) != "" {
		t.Skip("in a mutant")
	}
	skipShort(t)
	for i, mu := range mutations {
		t.Run(mu.name, func(t *testing.T) {
			src, err := ptxFS.ReadFile("ptx/" + mu.module)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := mutate(src, mu.kernel, mu.from, mu.to, mu.nth); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(os.Args[0], "-test.run=^TestSimMutant$", "-test.count=1")
			cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d", mutantEnv, i))
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the conformance suite passed with %s:\n%s", mu.name, out)
			}
			t.Logf("caught: %s", firstFailure(string(out)))
		})
	}
}

// firstFailure picks the line that says why the child failed.
func firstFailure(out string) string {
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if strings.HasPrefix(l, "panic: ") || strings.Contains(l, ".go:") && !strings.HasPrefix(l, "---") {
			return l
		}
	}
	return out
}
