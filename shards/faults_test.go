package shards

import (
	"math"
	"strings"
	"testing"
)

// TestManifestCountOverflow: counts whose sum overflows int64 are reported as corrupt,
// never as a negative sum (issue 15, item 13).
func TestManifestCountOverflow(t *testing.T) {
	m := NewManifest(testTokenizer(50257), Uint16, nil)
	for _, p := range []string{"a", "b"} {
		m.Shards = append(m.Shards, ShardInfo{Prefix: p, Documents: math.MaxInt64/2 + 1, Tokens: math.MaxInt64/2 + 1,
			BinSHA256: strings.Repeat("a", 64), IdxSHA256: strings.Repeat("b", 64)})
	}
	m.Documents, m.Tokens = 1, 1
	err := m.Validate()
	if err == nil || !strings.Contains(err.Error(), "int64") || strings.Contains(err.Error(), "-9") {
		t.Fatalf("Validate = %v, want the overflow named and no negative sum", err)
	}
}
