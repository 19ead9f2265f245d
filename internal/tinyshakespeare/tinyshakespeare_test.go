package tinyshakespeare

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

func TestTextIsCharRNNInput(t *testing.T) {
	text, err := Text()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(text)
	if len(text) != Size || hex.EncodeToString(sum[:]) != SHA256 {
		t.Errorf("%d bytes, sha256 %x; want %d, %s", len(text), sum, Size, SHA256)
	}
}
