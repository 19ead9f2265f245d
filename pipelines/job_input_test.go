package pipelines

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/shards"
	"gptkit/tokenize"
)

// TestMissingInputHint: a missing input said "input stat X: no such file or
// directory", with no next step; now it is named as given, with a hint, and a quoted
// pattern (which the shell did not expand) gets its own.
func TestMissingInputHint(t *testing.T) {
	dir := t.TempDir()
	tok := tokenize.NewCharsFromText("abc", "abc")
	for _, tt := range []struct{ input, want string }{
		{filepath.Join(dir, "nope.jsonl"), "input " + filepath.Join(dir, "nope.jsonl") + ": no such file (check the path)"},
		{filepath.Join(dir, "*.jsonl"), "input " + filepath.Join(dir, "*.jsonl") + ": no such file (a pattern is expanded by the shell, not by gptkit: leave it unquoted, and check that it matches)"},
	} {
		r := &TokenizeRun{Inputs: []string{tt.input}, Name: "x", Tokenizer: tok}
		_, err := r.describeJob(shards.Uint16)
		if err == nil || err.Error() != tt.want || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v\nwant %s", tt.input, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "stat ") {
			t.Errorf("%s: %v", tt.input, err)
		}
		// tokenize run sizes its inputs (Slice) before describing the job.
		if _, _, err := r.Slice(); err == nil || err.Error() != tt.want || !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("Slice of %s: %v\nwant %s", tt.input, err, tt.want)
		}
	}
}
