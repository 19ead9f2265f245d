package cli

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"gptkit/storage"
	"gptkit/tokenize"
	"gptkit/tokenize/embedded"
	"gptkit/tokenize/spec"
)

// TestStoreTokenizerBesideDownloaded: a tokenizer downloaded into the cache of the
// machine that made the dataset (a Hugging Face id, a URL of a tokenizer.json or of a
// .tiktoken rank file, a built-in name from --tokenizer-url with files of its own) is
// stored beside the data as a file written from it, which gives its fingerprint back,
// so that spec.ForDataset (shards cat --decode, train sample, train export) finds it
// with an empty cache and no --tokenizer; a download of a built-in's own file stores
// nothing. (Nothing was stored for a download: decoding needed --tokenizer again.)
func TestStoreTokenizerBesideDownloaded(t *testing.T) {
	ctx := context.Background()
	m, err := tokenize.Train(ctx, tokenize.TrainTexts([]string{strings.Repeat("the cat sat on the mat. ", 50)}),
		tokenize.TrainOptions{VocabSize: 270, Special: []string{"<|endoftext|>"}})
	if err != nil {
		t.Fatal(err)
	}
	var hf bytes.Buffer
	if err := m.WriteHFJSON(&hf); err != nil {
		t.Fatal(err)
	}
	var ranks bytes.Buffer // a vocabulary of its own: the bytes and "ab"
	for b := range 256 {
		fmt.Fprintf(&ranks, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(b)}), b)
	}
	fmt.Fprintf(&ranks, "%s 256\n", base64.StdEncoding.EncodeToString([]byte("ab")))
	vocab := map[string]int{}
	for b, c := range gpt2ByteChars() {
		vocab[c] = b
	}
	vocab["ab"] = 256
	vocab["<|endoftext|>"] = 257
	vj, _ := json.Marshal(vocab)
	merges := []byte("#version: 0.2\na b\n")
	neoxHF, err := embedded.Read("neox-20b", "tokenizer.json") // a built-in's own file
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{
		"/me/my-bpe/resolve/main/tokenizer.json":       hf.Bytes(),
		"/EleutherAI/neox/resolve/main/tokenizer.json": neoxHF,
		"/files/my-bpe.json":                           hf.Bytes(),
		"/files/cl100k_base.tiktoken":                  ranks.Bytes(),
		"/files/r50k_base.tiktoken":                    ranks.Bytes(),
		"/mirror/gpt2/vocab.json":                      vj,
		"/mirror/gpt2/merges.txt":                      merges,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Write(data)
	}))
	defer srv.Close()
	t.Setenv("HF_ENDPOINT", srv.URL)
	sum := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

	for _, tc := range []struct {
		name, spec string
		opt        spec.Options
		want       []string
	}{
		{"Hugging Face id", "me/my-bpe", spec.Options{}, []string{"tokenizer.json"}},
		{"URL of a tokenizer.json", srv.URL + "/files/my-bpe.json", spec.Options{}, []string{"tokenizer.json"}},
		{"URL of a rank file", srv.URL + "/files/cl100k_base.tiktoken", spec.Options{}, []string{"cl100k_base.tiktoken"}},
		{"URL of a rank file with GPT-2's pattern", srv.URL + "/files/r50k_base.tiktoken", spec.Options{}, []string{"r50k_base.tiktoken"}},
		{"built-in name from another URL", "gpt2", spec.Options{URL: srv.URL + "/mirror/gpt2", SHA256: sum(vj) + "," + sum(merges)}, []string{"tokenizer.json"}},
		{"Hugging Face id of a built-in's file", "EleutherAI/neox", spec.Options{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opt.CacheDir = t.TempDir()
			tok, err := spec.Load(ctx, tc.spec, tc.opt)
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			st, err := storage.Open(ctx, dir, storage.Options{})
			if err != nil {
				t.Fatal(err)
			}
			keys, wrote, err := StoreTokenizerBeside(ctx, st, tc.spec, tok, nil, nil)
			if err != nil || !slices.Equal(wrote, tc.want) || !slices.Equal(keys, tc.want) {
				t.Fatalf("wrote %v, keys %v (%v), want %v", wrote, keys, err, tc.want)
			}
			// Another machine's readers: an empty cache, no download.
			got, err := spec.ForDataset(ctx, dir, tok.Name(), tok.Fingerprint(), spec.Options{CacheDir: t.TempDir()})
			if err != nil {
				t.Fatalf("the dataset's tokenizer is not found beside it: %v", err)
			}
			if got.Fingerprint() != tok.Fingerprint() {
				t.Fatalf("found fingerprint %s, want %s", got.Fingerprint(), tok.Fingerprint())
			}
		})
	}
}
