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
		"gptkit/tokenize":      {},
		"gptkit/tokenize/spec": {"gptkit/tokenize"},
		"gptkit/storage":       {},
		"gptkit/shards":        {"gptkit/storage"},
		"gptkit/prep":          {"gptkit/storage"},
		"gptkit/loader":        {"gptkit/shards", "gptkit/storage"},
		"gptkit/pipelines":     {"gptkit/prep", "gptkit/tokenize", "gptkit/tokenize/spec", "gptkit/shards", "gptkit/storage"},
	}
	for pkg, ok := range allowed {
		out, err := exec.Command("go", "list", "-deps", pkg).Output()
		if err != nil {
			t.Fatalf("go list -deps %s: %v", pkg, err)
		}
		for _, dep := range strings.Fields(string(out)) {
			if dep == pkg || !strings.HasPrefix(dep, "gptkit/") || strings.HasPrefix(dep, "gptkit/internal/") || strings.HasPrefix(dep, pkg+"/internal/") {
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
