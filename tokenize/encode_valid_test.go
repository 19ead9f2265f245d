package tokenize

import (
	"math/rand"
	"testing"
	"time"
)

// TestAppendEncodeValidInvalidUTF8: AppendEncodeValidInt32 given invalid UTF-8 (which
// its caller must not do) returns ids in the vocabulary; it does not loop forever
// (the character classes' fix-up of multi-byte characters made no progress on a
// continuation byte after an ASCII one).
func TestAppendEncodeValidInvalidUTF8(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	inputs := []string{"a/\xb6b", "x/\xb65\xdb%\xa9}\rJq^\xff\x15u(Hg\x03=\xea\xe9\x1fK\xeagI|\x9f\x01\ti\x03>\x82$X\rA[G2~\x8a?(CW>\rb][$5{8 Xl\xc0,k\xc8<\xf1q"}
	for range 200 {
		b := make([]byte, r.Intn(300))
		for j := range b {
			if r.Intn(4) == 0 {
				b[j] = byte(0x80 + r.Intn(128))
			} else {
				b[j] = byte(r.Intn(128))
			}
		}
		inputs = append(inputs, string(b))
	}
	for _, name := range []string{"gpt2", "neox-20b", "cl100k_base"} {
		tok := sharedTokenizer(t, name)
		done := make(chan string, 1)
		go func() {
			for _, s := range inputs {
				ids, err := tok.AppendEncodeValidInt32(nil, s, false)
				if err != nil {
					done <- err.Error()
					return
				}
				for _, id := range ids {
					if id < 0 || int(id) >= tok.VocabSize() {
						done <- "an id out of the vocabulary for " + s
						return
					}
				}
			}
			done <- ""
		}()
		select {
		case msg := <-done:
			if msg != "" {
				t.Fatalf("%s: %s", name, msg)
			}
		case <-time.After(2 * time.Minute): // a few ms of work: generous for a loaded machine
			t.Fatalf("%s: AppendEncodeValidInt32 on invalid UTF-8 did not return", name)
		}
	}
}
