//go:build amd64 && !noasm && gc

package tokenize

import "testing"

func init() {
	if hasAVX2 {
		asmClassifiers["classifyBlocksAVX2"] = func(dst []classBlock, src []byte) {
			if len(dst) > 0 {
				classifyBlocksAVX2(&dst[0], &src[0], len(dst))
			}
		}
	}
	if hasAVX512 {
		asmClassifiers["classifyBlocksAVX512"] = func(dst []classBlock, src []byte) {
			if len(dst) > 0 {
				classifyBlocksAVX512(&dst[0], &src[0], len(dst))
			}
		}
	}
}

// TestASMClassifiersPresent: on this CPU the classifiers it has are tested.
func TestASMClassifiersPresent(t *testing.T) {
	t.Logf("AVX2 %v, AVX-512 %v: %d assembly classifiers tested", hasAVX2, hasAVX512, len(asmClassifiers))
}
