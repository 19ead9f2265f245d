package embedded

import "testing"

func TestReadUnknown(t *testing.T) {
	if _, err := Read("gpt3", "vocab.json"); err == nil {
		t.Error("an unknown tokenizer read without error")
	}
}
