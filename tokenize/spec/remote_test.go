package spec

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gptkit/internal/testfiles"
)

// TestRemoteSpecs: a Hugging Face id (from $HF_ENDPOINT) and a URL download once into
// the cache, unverified unless a sha256 is given, and say so.
func TestRemoteSpecs(t *testing.T) {
	srv := newTokenizerServer(t)
	srv.files["/openai-community/gpt2/resolve/main/tokenizer.json"] = testfiles.Read(t, "tokenizers/gpt2/tokenizer.json")
	t.Setenv("HF_ENDPOINT", srv.URL)
	cache := t.TempDir()
	var log bytes.Buffer
	opt := Options{CacheDir: cache, Logger: slog.New(slog.NewTextHandler(&log, nil))}

	tok, err := Load(context.Background(), "openai-community/gpt2", opt)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, tok, "gpt2")
	if tok.Name() != "gpt2" {
		t.Errorf("name %q, want the repository's", tok.Name())
	}
	if _, err := os.Stat(filepath.Join(cache, "hf", "openai-community", "gpt2", "tokenizer.json")); err != nil {
		t.Error(err)
	}
	if !strings.Contains(log.String(), "not checked against a known sha256") || !strings.Contains(log.String(), "sha256=f6ed3d30") {
		t.Errorf("no warning about the unverified file: %s", log.String())
	}
	n := len(srv.log())
	if _, err := Load(context.Background(), "openai-community/gpt2", opt); err != nil || len(srv.log()) != n {
		t.Errorf("the second load: %v, %d more requests", err, len(srv.log())-n)
	}

	// A URL, pinned by its sha256.
	u := srv.URL + "/tiktoken/cl100k_base.tiktoken"
	pinned := opt
	pinned.SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
	tok, err = Load(context.Background(), u, pinned)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, tok, "cl100k_base")
	matches, _ := filepath.Glob(filepath.Join(cache, "url", "*", "cl100k_base.tiktoken"))
	if len(matches) != 1 {
		t.Errorf("cache files %v", matches)
	}

	for _, tc := range []struct {
		spec string
		opt  Options
		want string
	}{
		{srv.URL + "/neox-20b/tokenizer.json", Options{CacheDir: t.TempDir(), SHA256: strings.Repeat("0", 64)}, "sha256"},
		{"openai-community/gpt2", Options{CacheDir: t.TempDir(), URL: srv.URL + "/x"}, "--tokenizer-url applies to the built-in names"},
		{"nobody/nothing", Options{CacheDir: t.TempDir()}, "nobody/nothing/resolve/main/tokenizer.json"},
	} {
		if _, err := Load(context.Background(), tc.spec, tc.opt); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.spec, err, tc.want)
		}
	}
}

// TestMissingLocalPathNotDownloaded: a mistyped path of the form ORG/NAME (a
// tokenizer.json in a directory, or a directory under one that exists) fails naming the
// missing path, without a download; it was taken for a Hugging Face id and fetched, and
// offline the error said to retry later or pass --tokenizer-url.
func TestMissingLocalPathNotDownloaded(t *testing.T) {
	srv := newTokenizerServer(t)
	t.Setenv("HF_ENDPOINT", srv.URL)
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("data", 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ spec, want string }{
		{"typo/tokenizer.json", "tokenizer file typo/tokenizer.json: no such file (a path, by its .json ending"},
		{"tok/cl100k_base.tiktoken", "no such file (a path, by its .tiktoken ending"},
		{"tok/merges.txt", "no such file (a path, by its .txt ending"},
	} {
		_, err := Load(context.Background(), tc.spec, Options{CacheDir: t.TempDir()})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.spec, err, tc.want)
		}
	}
	if l := srv.log(); len(l) != 0 {
		t.Errorf("requests %v, want none", l)
	}
	// data/tok, where data/ is a local directory, may be a typo or an id: it is looked
	// for on Hugging Face, and the failure says it is no local path either.
	want := "nor is data/tok a local path: the local directory data holds no such file or directory"
	if _, err := Load(context.Background(), "data/tok", Options{CacheDir: t.TempDir()}); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("data/tok: error %v, want %q", err, want)
	}
}

// TestIDWithOrgDirectory: a Hugging Face id whose ORG is also a local directory (one
// holding datasets made with its tokenizer: --output openai-community/gpt2-tokens) is
// still an id, from the cache or downloaded; 2a4292a refused it as a missing path, even
// cached, so a rerun of the command that made that directory failed.
func TestIDWithOrgDirectory(t *testing.T) {
	srv := newTokenizerServer(t)
	srv.files["/openai-community/gpt2/resolve/main/tokenizer.json"] = testfiles.Read(t, "tokenizers/gpt2/tokenizer.json")
	t.Setenv("HF_ENDPOINT", srv.URL)
	t.Chdir(t.TempDir())
	opt := Options{CacheDir: t.TempDir()}
	if _, err := Load(context.Background(), "openai-community/gpt2", opt); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("openai-community/gpt2-tokens", 0o755); err != nil {
		t.Fatal(err)
	}
	n := len(srv.log())
	if _, err := Load(context.Background(), "openai-community/gpt2", opt); err != nil || len(srv.log()) != n {
		t.Errorf("cached: %v, %d requests", err, len(srv.log())-n)
	}
	if _, err := Load(context.Background(), "openai-community/gpt2", Options{CacheDir: t.TempDir()}); err != nil {
		t.Errorf("not cached: %v", err)
	}
}

// TestDownloadFailureNextStep: a failed download names a next step that the SPEC at
// hand can take. Every one said "pass --tokenizer-url to use a mirror", which a
// Hugging Face id or a URL refuses ("--tokenizer-url applies to the built-in names"),
// and which a named tokenizer's failed --tokenizer-url had already been given.
func TestDownloadFailureNextStep(t *testing.T) {
	srv := newTokenizerServer(t)
	t.Setenv("HF_ENDPOINT", srv.URL)
	for _, tc := range []struct {
		spec string
		opt  Options
		want string
	}{
		{"nobody/nothing", Options{}, "set HF_ENDPOINT to use a mirror of Hugging Face"},
		{srv.URL + "/missing/tokenizer.json", Options{}, "retry later, check the URL, or download"},
		{"cl100k_base", Options{URL: srv.URL + "/missing.tiktoken"}, "check --tokenizer-url, or leave out --tokenizer-url and --tokenizer-sha256 to use the built-in copy"},
	} {
		tc.opt.CacheDir = t.TempDir()
		_, err := Load(context.Background(), tc.spec, tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "pass --tokenizer-url") {
			t.Errorf("%s: error %v, want %q and no --tokenizer-url to pass", tc.spec, err, tc.want)
		}
	}
}
