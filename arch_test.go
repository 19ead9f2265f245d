package gptkit_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportDirection keeps data flowing one way (prep -> tokenize -> shards -> loader ->
// train; pipelines compose stages; stages hand off through files): each package may import
// only the packages of ours listed here (gptkit/internal/... is always allowed).
func TestImportDirection(t *testing.T) {
	allowed := map[string][]string{
		"gptkit/tokenize":                   {},
		"gptkit/tokenize/spec":              {"gptkit/tokenize", "gptkit/tokenize/embedded/compiled"},
		"gptkit/tokenize/embedded":          {},
		"gptkit/tokenize/embedded/compiled": {},
		"gptkit/storage":                    {},
		"gptkit/shards":                     {"gptkit/storage"},
		"gptkit/prep":                       {"gptkit/storage"},
		"gptkit/loader":                     {"gptkit/shards", "gptkit/storage"},
		"gptkit/pipelines":                  {"gptkit/prep", "gptkit/tokenize", "gptkit/tokenize/spec", "gptkit/tokenize/embedded/compiled", "gptkit/shards", "gptkit/storage"},
		"gptkit/kernels":                    {},
		"gptkit/kernels/ref":                {"gptkit/kernels"},
		"gptkit/kernels/cpu":                {"gptkit/kernels"},
		"gptkit/kernels/cuda":               {"gptkit/kernels", "gptkit/kernels/cuda/sim"},
		// the PTX simulator knows nothing of the kernels it runs
		"gptkit/kernels/cuda/sim": {},
		// train never imports tokenize or prep: the tokenizer comes in through the manifest
		// (cmd/train wires tokenize/spec for sample).
		"gptkit/train": {"gptkit/kernels", "gptkit/loader", "gptkit/shards", "gptkit/storage",
			"gptkit/train/checkpoint", "gptkit/train/safetensors", "gptkit/train/hfgpt2", "gptkit/train/tensorboard"},
		"gptkit/train/checkpoint":  {"gptkit/storage"},
		"gptkit/train/safetensors": {},
		"gptkit/train/hfgpt2":      {"gptkit/train/safetensors"},
		"gptkit/train/plot":        {},
		"gptkit/train/tensorboard": {},
		"gptkit/train/dist":        {},
		"gptkit/train/launch":      {"gptkit/train/dist"},
	}
	for pkg, ok := range allowed {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == pkg || !strings.HasPrefix(dep, "gptkit/") || strings.HasPrefix(dep, "gptkit/internal/") || internalTo(dep, pkg) {
				continue
			}
			found := false
			for _, a := range ok {
				found = found || dep == a
			}
			if !found {
				t.Errorf("%s imports %s, which the architecture does not allow (allowed: %v)", pkg, dep, ok)
			}
		}
	}
}

// internalTo reports whether dep is an internal package that pkg may import by Go's rule:
// pkg lies in the tree rooted at the parent of dep's internal directory (for example
// gptkit/kernels/cpu and gptkit/kernels/internal/check).
func internalTo(dep, pkg string) bool {
	i := strings.LastIndex(dep, "/internal/")
	if i < 0 {
		return false
	}
	parent := dep[:i]
	return pkg == parent || strings.HasPrefix(pkg, parent+"/")
}
