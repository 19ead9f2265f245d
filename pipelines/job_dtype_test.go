package pipelines

import (
	"strings"
	"testing"

	"gptkit/shards"
)

// TestChangedFromBadDType: a job description whose dtype does not parse (describeJob
// never makes one) is an error naming it; it was compared silently as the zero DType.
func TestChangedFromBadDType(t *testing.T) {
	m := shards.NewManifest(shards.TokenizerInfo{Name: "gpt2", Fingerprint: "fp"}, shards.Uint16, nil)
	d := &jobDesc{Tokenizer: "fp", DType: "uint17"}
	if _, err := d.changedFrom(m, "gpt2", false); err == nil || !strings.Contains(err.Error(), "uint17") || !strings.Contains(err.Error(), "dtype") {
		t.Fatalf("changedFrom with dtype uint17: %v, want an error naming it", err)
	}
	d.DType = shards.Uint16.String()
	if _, err := d.changedFrom(m, "gpt2", false); err != nil {
		t.Fatalf("changedFrom with dtype %s: %v", d.DType, err)
	}
}
