package cli

import (
	"flag"
	"io"
	"slices"
	"testing"
)

// TestSharedFlagSets: the shared sets register their names, and the tokenizer flags map
// onto spec.Options.
func TestSharedFlagSets(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var s3 S3Flags
	var cache string
	var tok TokenizerFlags
	s3.Register(fs)
	RegisterCacheDir(fs, &cache, "")
	tok.Register(fs, "the tokenizer")
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	want := []string{"cache-dir", "s3-endpoint", "s3-path-style", "tokenizer", "tokenizer-cache-dir", "tokenizer-sha256", "tokenizer-url"}
	if !slices.Equal(names, want) {
		t.Errorf("flags %v, want %v", names, want)
	}
	err := fs.Parse([]string{"--s3-endpoint", "http://e", "--s3-path-style", "--cache-dir", "/c", "--tokenizer", "gpt2",
		"--tokenizer-url", "https://m/gpt2", "--tokenizer-sha256", "a,b", "--tokenizer-cache-dir", "/t"})
	if err != nil {
		t.Fatal(err)
	}
	o := tok.Options(nil)
	if s3 != (S3Flags{"http://e", true}) || cache != "/c" || tok.Spec != "gpt2" || o.URL != "https://m/gpt2" || o.SHA256 != "a,b" || o.CacheDir != "/t" {
		t.Errorf("parsed %+v %q %+v -> %+v", s3, cache, tok, o)
	}
}
