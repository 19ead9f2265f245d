package cli

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize"
	"gptkit/tokenize/embedded"
	"gptkit/tokenize/spec"
)

// gpt2ByteChars is GPT-2's bytes_to_unicode: the character that stands for each byte in
// vocab.json and merges.txt.
func gpt2ByteChars() []string {
	var bs []int
	for b := '!'; b <= '~'; b++ {
		bs = append(bs, int(b))
	}
	for b := 0xA1; b <= 0xAC; b++ {
		bs = append(bs, b)
	}
	for b := 0xAE; b <= 0xFF; b++ {
		bs = append(bs, b)
	}
	chars := make([]string, 256)
	n := 0
	for b := range 256 {
		if slices.Contains(bs, b) {
			chars[b] = string(rune(b))
		} else {
			chars[b] = string(rune(256 + n))
			n++
		}
	}
	return chars
}

// TestStoreTokenizerBeside: a dataset's tokenizer of local files is stored beside it,
// where spec.ForDataset (shards cat --decode, train sample, train export) finds it by
// the manifest's name and fingerprint without --tokenizer: chars.json; a tokenizer.json
// by any name (tokenize train's output); vocab.json + merges.txt. Earlier tokenizer
// files that readers would try first are removed; a built-in name, or a copy of a
// built-in encoding's .tiktoken file (which stored 1.6-3.6 MB beside every dataset that
// the name loads), stores nothing and removes them all.
// (Only prep shakespeare stored its chars.json; the others were found nowhere.)
func TestStoreTokenizerBeside(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()

	chars := tokenize.NewCharsFromText("abc cab\n", "mychars")

	m, err := tokenize.Train(ctx, tokenize.TrainTexts([]string{strings.Repeat("the cat sat on the mat. ", 50)}),
		tokenize.TrainOptions{VocabSize: 270, Special: []string{"<|endoftext|>"}})
	if err != nil {
		t.Fatal(err)
	}
	var hf bytes.Buffer
	if err := m.WriteHFJSON(&hf); err != nil {
		t.Fatal(err)
	}
	hfPath := filepath.Join(src, "my-bpe.json")
	os.WriteFile(hfPath, hf.Bytes(), 0o644)

	vmDir := filepath.Join(src, "vm")
	os.Mkdir(vmDir, 0o755)
	vocab := map[string]int{}
	for b, c := range gpt2ByteChars() {
		vocab[c] = b
	}
	vocab["ab"] = 256
	vocab["<|endoftext|>"] = 257
	vj, _ := json.Marshal(vocab)
	os.WriteFile(filepath.Join(vmDir, "vocab.json"), vj, 0o644)
	os.WriteFile(filepath.Join(vmDir, "merges.txt"), []byte("#version: 0.2\na b\n"), 0o644)

	// A rank file of its own for cl100k_base's encoding: its name, not its fingerprint.
	tkDir := filepath.Join(src, "tk")
	os.Mkdir(tkDir, 0o755)
	var ranks bytes.Buffer
	for b := range 256 {
		fmt.Fprintf(&ranks, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(b)}), b)
	}
	fmt.Fprintf(&ranks, "%s 256\n", base64.StdEncoding.EncodeToString([]byte("ab")))
	tkPath := filepath.Join(tkDir, "cl100k_base.tiktoken")
	os.WriteFile(tkPath, ranks.Bytes(), 0o644)
	// A copy of the publisher's cl100k_base.tiktoken: the built-in's fingerprint.
	canon, err := embedded.Read("cl100k_base", "cl100k_base.tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	canonPath := filepath.Join(src, "cl100k_base.tiktoken")
	os.WriteFile(canonPath, canon, 0o644)
	// Hugging Face's gpt2 files in a directory of another name: the built-in's
	// fingerprint (which stored them beside every dataset under the directory's name).
	gpt2Dir := filepath.Join(src, "my-gpt2")
	os.Mkdir(gpt2Dir, 0o755)
	for _, f := range []string{"vocab.json", "merges.txt"} {
		data, err := embedded.Read("gpt2", f)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(gpt2Dir, f), data, 0o644)
	}
	// OpenAI's r50k_base.tiktoken (GPT-2's tokens, each ranked by its id), also as
	// gpt2.tiktoken: the built-in, though built from vocab.json and merges.txt (which
	// stored the rank file, 0.8 MB, and recorded its own fingerprint).
	gpt2, err := spec.LoadName(ctx, "gpt2", spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var r50k bytes.Buffer
	for id := range 50256 {
		fmt.Fprintf(&r50k, "%s %d\n", base64.StdEncoding.EncodeToString(gpt2.TokenBytes(id)), id)
	}
	r50kDir := filepath.Join(src, "r50k")
	os.Mkdir(r50kDir, 0o755)
	os.WriteFile(filepath.Join(r50kDir, "r50k_base.tiktoken"), r50k.Bytes(), 0o644)
	os.WriteFile(filepath.Join(r50kDir, "gpt2.tiktoken"), r50k.Bytes(), 0o644)

	for _, tc := range []struct {
		name, spec string
		tok        func(t *testing.T, s string) *tokenize.Tokenizer
		want       []string
	}{
		{"chars", "", func(*testing.T, string) *tokenize.Tokenizer { return chars }, []string{"chars.json"}},
		{"tokenizer.json by another name", hfPath, nil, []string{"tokenizer.json"}},
		{"vocab and merges directory", vmDir, nil, []string{"vocab.json", "merges.txt"}},
		{"vocab.json named", filepath.Join(vmDir, "vocab.json"), nil, []string{"vocab.json", "merges.txt"}},
		{".tiktoken file", tkPath, nil, []string{"cl100k_base.tiktoken"}},
		{"built-in encoding's .tiktoken file", canonPath, nil, nil},
		{"copy of the built-in gpt2's directory", gpt2Dir, nil, nil},
		{"copy of the built-in gpt2's vocab.json", filepath.Join(gpt2Dir, "vocab.json"), nil, nil},
		{"OpenAI's r50k_base.tiktoken", filepath.Join(r50kDir, "r50k_base.tiktoken"), nil, nil},
		{"OpenAI's r50k_base.tiktoken as gpt2.tiktoken", filepath.Join(r50kDir, "gpt2.tiktoken"), nil, nil},
		{"built-in", "char", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var tok *tokenize.Tokenizer
			if tc.tok != nil {
				tok = tc.tok(t, tc.spec)
			} else if tok, err = spec.Load(ctx, tc.spec, spec.Options{}); err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			// An earlier dataset's tokenizer.json, which readers try first, and
			// another's rank file, which they try last.
			os.WriteFile(filepath.Join(dir, "tokenizer.json"), hf.Bytes(), 0o644)
			os.WriteFile(filepath.Join(dir, "o200k_base.tiktoken"), ranks.Bytes(), 0o644)
			if tc.spec == canonPath { // an earlier vocabulary of its own by that name
				os.WriteFile(filepath.Join(dir, "cl100k_base.tiktoken"), ranks.Bytes(), 0o644)
			}
			if tc.name == "tokenizer.json by another name" {
				os.Remove(filepath.Join(dir, "tokenizer.json"))
				os.WriteFile(filepath.Join(dir, "chars.json"), []byte(`{"type": "char", "chars": ["x"]}`), 0o644)
			}
			st, err := storage.Open(ctx, dir, storage.Options{})
			if err != nil {
				t.Fatal(err)
			}
			// The earlier dataset's command recorded storing them.
			prev := &shards.Manifest{Source: map[string]any{shards.SourceTokenizerFiles: []any{"tokenizer.json", "chars.json", "o200k_base.tiktoken", "cl100k_base.tiktoken"}}}
			_, wrote, err := StoreTokenizerBeside(ctx, st, tc.spec, tok, prev, nil)
			if err != nil || !slices.Equal(wrote, tc.want) {
				t.Fatalf("wrote %v (%v), want %v", wrote, err, tc.want)
			}
			// The earlier datasets' files go: where nothing is stored, one that no
			// longer loaded stopped the readers before they tried the name; the others
			// travelled with the data (shards merge) as if they were its tokenizer.
			var left []string
			for _, key := range spec.DatasetFiles {
				if _, err := os.Stat(filepath.Join(dir, key)); err == nil {
					left = append(left, key)
				}
			}
			if !slices.Equal(left, tc.want) {
				t.Fatalf("beside the data: %v, want %v", left, tc.want)
			}
			// Readers find it: the files beside the data, else the built-in by name.
			got, err := spec.ForDataset(ctx, dir, tok.Name(), tok.Fingerprint(), spec.Options{})
			if err != nil {
				t.Fatalf("the dataset's tokenizer is not found beside it: %v", err)
			}
			if got.Fingerprint() != tok.Fingerprint() {
				t.Fatalf("found fingerprint %s, want %s", got.Fingerprint(), tok.Fingerprint())
			}
		})
	}
}

// TestStoreTokenizerBesideKeepsUsersFiles: the files --tokenizer was read from, when
// they lie in the data's own directory, and a copy of a built-in encoding's rank file
// (which is never stored, so a user's) stay; a file that already holds what would be
// stored is not reported as written, so a caller that fails afterwards and removes
// what it wrote (shards convert) leaves the user's file.
func TestStoreTokenizerBesideKeepsUsersFiles(t *testing.T) {
	ctx := context.Background()
	canon, err := embedded.Read("cl100k_base", "cl100k_base.tiktoken")
	if err != nil {
		t.Fatal(err)
	}
	var ranks bytes.Buffer
	for b := range 256 {
		fmt.Fprintf(&ranks, "%s %d\n", base64.StdEncoding.EncodeToString([]byte{byte(b)}), b)
	}
	m, err := tokenize.Train(ctx, tokenize.TrainTexts([]string{strings.Repeat("the cat sat on the mat. ", 50)}),
		tokenize.TrainOptions{VocabSize: 270, Special: []string{"<|endoftext|>"}})
	if err != nil {
		t.Fatal(err)
	}
	var hf bytes.Buffer
	if err := m.WriteHFJSON(&hf); err != nil {
		t.Fatal(err)
	}
	vocab := map[string]int{}
	for b, c := range gpt2ByteChars() {
		vocab[c] = b
	}
	vj, _ := json.Marshal(vocab)

	for _, tc := range []struct {
		name  string
		files map[string][]byte // in the data's directory before
		spec  string            // relative to it, or a name
		wrote []string
	}{
		{"a copy of a built-in rank file, another tokenizer by name",
			map[string][]byte{"cl100k_base.tiktoken": canon}, "gpt2", nil},
		{"--tokenizer is a rank file in the data's directory",
			map[string][]byte{"cl100k_base.tiktoken": ranks.Bytes()}, "cl100k_base.tiktoken", nil},
		{"--tokenizer is a chars.json in the data's directory, written otherwise",
			map[string][]byte{"chars.json": []byte("{\"type\": \"char\",\n \"chars\": [\"a\", \"b\", \"c\"]}\n")}, "chars.json", nil},
		{"--tokenizer is a Hugging Face directory that is the data's",
			map[string][]byte{"tokenizer.json": hf.Bytes(), "vocab.json": vj, "merges.txt": []byte("#version: 0.2\n")}, ".", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tc.files {
				os.WriteFile(filepath.Join(dir, name), data, 0o644)
			}
			specString := tc.spec
			if specString == "." || strings.Contains(specString, ".") {
				specString = filepath.Join(dir, tc.spec)
			}
			tok, err := spec.Load(ctx, specString, spec.Options{})
			if err != nil {
				t.Fatal(err)
			}
			st, err := storage.Open(ctx, dir, storage.Options{})
			if err != nil {
				t.Fatal(err)
			}
			_, wrote, err := StoreTokenizerBeside(ctx, st, specString, tok, nil, nil)
			if err != nil || !slices.Equal(wrote, tc.wrote) {
				t.Fatalf("wrote %v (%v), want %v", wrote, err, tc.wrote)
			}
			for name, data := range tc.files {
				got, err := os.ReadFile(filepath.Join(dir, name))
				if err != nil || !bytes.Equal(got, data) {
					t.Fatalf("the user's %s was removed or changed (%v)", name, err)
				}
			}
			got, err := spec.ForDataset(ctx, dir, tok.Name(), tok.Fingerprint(), spec.Options{})
			if err != nil || got.Fingerprint() != tok.Fingerprint() {
				t.Fatalf("the dataset's tokenizer is not found beside it: %v", err)
			}
		})
	}
}

// TestStoreTokenizerBesideSourceThroughLink: --tokenizer LINK/chars.json, LINK a
// symbolic link to the data's directory, which also holds a tokenizer.json of the
// user's: that file was removed as an earlier dataset's, as the tokenizer's directory
// was compared by name; now it is kept, as with --tokenizer DIR/chars.json.
func TestStoreTokenizerBesideSourceThroughLink(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Skip("no symbolic links:", err)
	}
	users := []byte(`{"type": "char", "chars": ["x", "y"]}`) // another tokenizer, as tokenizer.json
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), users, 0o644)
	os.WriteFile(filepath.Join(dir, "chars.json"), []byte(`{"type": "char", "chars": ["a", "b", "c"]}`), 0o644)
	given := filepath.Join(link, "chars.json")
	tok, err := spec.Load(ctx, given, spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st, err := storage.Open(ctx, dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := StoreTokenizerBeside(ctx, st, given, tok, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "tokenizer.json")); err != nil || !bytes.Equal(got, users) {
		t.Errorf("the user's tokenizer.json was removed or changed (%v)", err)
	}
}

// TestPlanTokenizerBesideOnlyRecordedFiles: only the tokenizer files an earlier
// command recorded in its manifest are replaced or removed. A user's own file where
// one is to be stored is refused, naming it, before anything is written (it was
// overwritten); the user's files that were the earlier run's --tokenizer stay when a
// rerun uses another tokenizer (a trained tokenizer.json was removed).
func TestPlanTokenizerBesideOnlyRecordedFiles(t *testing.T) {
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
	users := []byte(`{"type": "char", "chars": ["x", "y"]}`)
	dir := t.TempDir()
	st, err := storage.Open(ctx, dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	mine := filepath.Join(t.TempDir(), "mytok.json")
	os.WriteFile(mine, hf.Bytes(), 0o644)
	tok, err := spec.Load(ctx, mine, spec.Options{})
	if err != nil {
		t.Fatal(err)
	}

	// A tokenizer.json of the user's where this one's is to go: refused.
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), users, 0o644)
	if _, err := PlanTokenizerBeside(ctx, st, mine, tok, nil, nil); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "tokenizer.json")) {
		t.Fatalf("a user's tokenizer.json in the way: %v, want a refusal naming it", err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "tokenizer.json")); !bytes.Equal(got, users) {
		t.Fatal("the user's tokenizer.json was changed")
	}
	// The same where an earlier command recorded storing it: replaced.
	prev := &shards.Manifest{Source: WithTokenizerFiles(nil, []string{"tokenizer.json"})}
	keys, wrote, err := StoreTokenizerBeside(ctx, st, mine, tok, prev, nil)
	if err != nil || !slices.Equal(keys, []string{"tokenizer.json"}) || !slices.Equal(wrote, keys) {
		t.Fatalf("keys %v wrote %v (%v)", keys, wrote, err)
	}
	// A rerun: the same bytes, nothing written, still listed.
	keys, wrote, err = StoreTokenizerBeside(ctx, st, mine, tok, nil, nil)
	if err != nil || !slices.Equal(keys, []string{"tokenizer.json"}) || len(wrote) != 0 {
		t.Fatalf("rerun: keys %v wrote %v (%v)", keys, wrote, err)
	}

	// --tokenizer DIR/tokenizer.json with DIR the output: nothing stored nor listed;
	// a rerun with gpt2 leaves it (nothing recorded), one after a recorded store
	// removes what was recorded.
	dir2 := t.TempDir()
	st2, _ := storage.Open(ctx, dir2, storage.Options{})
	own := filepath.Join(dir2, "tokenizer.json")
	os.WriteFile(own, hf.Bytes(), 0o644)
	keys, wrote, err = StoreTokenizerBeside(ctx, st2, own, tok, nil, nil)
	if err != nil || len(keys) != 0 || len(wrote) != 0 {
		t.Fatalf("the source in the output: keys %v wrote %v (%v)", keys, wrote, err)
	}
	gpt2, err := spec.Load(ctx, "gpt2", spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := StoreTokenizerBeside(ctx, st2, "gpt2", gpt2, &shards.Manifest{Source: WithTokenizerFiles(map[string]any{}, keys)}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(own); err != nil {
		t.Fatalf("the user's tokenizer.json, the earlier run's --tokenizer, was removed: %v", err)
	}
	if _, _, err := StoreTokenizerBeside(ctx, st, "gpt2", gpt2, prev, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err == nil {
		t.Fatal("the tokenizer.json an earlier command recorded storing was left")
	}
}

// TestStoreTokenizerBesideRecordedSourceStaysListed: a rerun with --tokenizer
// DIR/tokenizer.json, the file an earlier run stored beside the data in DIR, keeps it
// listed as the dataset's (it was dropped from the manifest's list, so a later run with
// another tokenizer left the stale file beside that dataset).
func TestStoreTokenizerBesideRecordedSourceStaysListed(t *testing.T) {
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
	dir := t.TempDir()
	st, err := storage.Open(ctx, dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	stored := filepath.Join(dir, "tokenizer.json")
	os.WriteFile(stored, hf.Bytes(), 0o644)
	tok, err := spec.Load(ctx, stored, spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	prev := &shards.Manifest{Source: WithTokenizerFiles(nil, []string{"tokenizer.json"})}
	keys, wrote, err := StoreTokenizerBeside(ctx, st, stored, tok, prev, nil)
	if err != nil || !slices.Equal(keys, []string{"tokenizer.json"}) || len(wrote) != 0 {
		t.Fatalf("keys %v wrote %v (%v), want tokenizer.json listed, nothing written", keys, wrote, err)
	}
	if got, err := os.ReadFile(stored); err != nil || !bytes.Equal(got, hf.Bytes()) {
		t.Fatalf("the tokenizer.json was changed (%v)", err)
	}
	gpt2, err := spec.Load(ctx, "gpt2", spec.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := StoreTokenizerBeside(ctx, st, "gpt2", gpt2, &shards.Manifest{Source: WithTokenizerFiles(nil, keys)}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stored); err == nil {
		t.Fatal("the stored tokenizer.json of the earlier dataset was left beside the gpt2 one")
	}
}
