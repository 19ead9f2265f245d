package spec

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"slices"
	"testing"

	"gptkit/internal/testfiles"
	"gptkit/tokenize/embedded"
	"gptkit/tokenize/embedded/compiled"
)

// failingTransport fails the test on any request: named tokenizers need no network.
type failingTransport struct{ t *testing.T }

func (f failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	f.t.Errorf("request to %s: a named tokenizer must not need the network", r.URL)
	return nil, http.ErrServerClosed
}

// TestNamedTokenizersAreEmbedded loads every named tokenizer with no network and an
// empty cache, and checks its ids against every golden document.
func TestNamedTokenizersAreEmbedded(t *testing.T) {
	for _, tt := range []struct{ name, golden string }{
		{"gpt2", "gpt2"}, {"r50k_base", "gpt2"}, {"neox-20b", "neox-20b"}, {"cl100k_base", "cl100k_base"}, {"o200k_base", "o200k_base"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cache := t.TempDir()
			tok, err := Load(context.Background(), tt.name, Options{CacheDir: cache, HTTPClient: &http.Client{Transport: failingTransport{t}}})
			if err != nil {
				t.Fatal(err)
			}
			if entries, _ := os.ReadDir(cache); len(entries) != 0 {
				t.Errorf("the cache got %v", entries)
			}
			bad := 0
			for i, doc := range testfiles.Golden(t, tt.golden) {
				if got := tok.Encode(doc.Text); !slices.Equal(got, doc.IDs) {
					if bad++; bad <= 3 {
						t.Errorf("golden/%s.jsonl line %d: ids differ", tt.golden, i+1)
					}
				}
			}
		})
	}
}

// TestEmbeddedFilesAreTheCanonicalOnes: every embedded file has the sha256 of the
// publisher's file, which a download is checked against too.
func TestEmbeddedFilesAreTheCanonicalOnes(t *testing.T) {
	for _, named := range namedTokenizers {
		for _, file := range named.files {
			data, err := embedded.Read(named.cacheDir, file.name)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			if got := hex.EncodeToString(sum[:]); got != file.sha256 {
				t.Errorf("%s %s: sha256 %s, want %s", named.name, file.name, got, file.sha256)
			}
		}
	}
}

// TestEmbeddedCompiledMatchesFiles: the compiled form each name loads from is what the
// publisher's embedded files compile to now, byte for byte (else go generate in
// tokenize/embedded/compiled was not run after a change to the files or to the compiler), and it
// loads into the tokenizer those files build (same fingerprint).
func TestEmbeddedCompiledMatchesFiles(t *testing.T) {
	dirs, names := EmbeddedDirs()
	for i, dir := range dirs {
		t.Run(dir, func(t *testing.T) {
			src, err := FromFiles(names[i], embedded.Read)
			if err != nil {
				t.Fatal(err)
			}
			want, err := src.MarshalCompiled()
			if err != nil {
				t.Fatal(err)
			}
			got, err := compiled.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("tokenize/embedded/compiled/%s/%s.zst is stale: run go generate ./tokenize/embedded/compiled (make generate)", dir, compiled.File)
			}
			tok, err := Load(context.Background(), names[i], Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tok.Fingerprint() != src.Fingerprint() || tok.Name() != names[i] {
				t.Errorf("loaded %s %s, built %s", tok.Name(), tok.Fingerprint(), src.Fingerprint())
			}
		})
	}
}
