package spec

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"gptkit/tokenize"
)

func TestForDataset(t *testing.T) {
	ctx := context.Background()
	offline := Options{CacheDir: t.TempDir(), HTTPClient: &http.Client{Transport: failingTransport{t}}}
	// A character vocabulary beside the data.
	dir := t.TempDir()
	writeChars(t, dir, "hello world")
	chars, err := Load(ctx, dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := ForDataset(ctx, dir, "shakespeare-char", chars.Fingerprint(), offline)
	if err != nil || tok.Fingerprint() != chars.Fingerprint() {
		t.Fatalf("chars.json beside the data: %v", err)
	}
	// A known name, with no network.
	gpt2, err := Load(ctx, "gpt2", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := ForDataset(ctx, t.TempDir(), "gpt2", gpt2.Fingerprint(), offline); err != nil || tok.Fingerprint() != gpt2.Fingerprint() {
		t.Fatalf("gpt2 by name: %v", err)
	}
	// Neither: the error says what was tried.
	_, err = ForDataset(ctx, dir, "gpt2", tokenize.NewNeoXChar().Fingerprint(), offline)
	for _, want := range []string{"chars.json has fingerprint", "the known gpt2 has fingerprint"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not say %q", err, want)
		}
	}
	if _, err := ForDataset(ctx, "", "mine", "abc", offline); err == nil || !strings.Contains(err.Error(), `"mine" is not a known tokenizer name`) {
		t.Errorf("unknown name: %v", err)
	}
}
