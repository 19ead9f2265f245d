package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"gptkit/internal/testfiles"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize"
)

// catText runs `shards cat --decode` and decodes its output.
func catText(t *testing.T, args ...string) string {
	t.Helper()
	out := mustRun(t, append([]string{"cat", "--decode"}, args...)...)
	var s string
	if err := json.Unmarshal([]byte(out), &s); err != nil || strings.Count(out, "\n") != 1 {
		t.Fatalf("cat --decode: %q is not one JSON string line (%v)", out, err)
	}
	return s
}

func TestCatAcrossShards(t *testing.T) {
	dir := t.TempDir()
	docs := [][][]int{{{1, 2}, {3}}, {}, {{4, 5, 6}, {50256}, {}}}
	writeDataset(t, dir, gpt2Info(t), docs...)
	var all [][]int
	for _, shard := range docs {
		all = append(all, shard...)
	}
	for k, want := range all {
		if got := catIDs(t, dir, k); !slices.Equal(got, want) || got == nil {
			t.Errorf("cat --doc %d = %v, want %v", k, got, want)
		}
	}
	if len(all) != 5 {
		t.Fatalf("%d documents", len(all))
	}
	wantFailure(t, 1, []string{"document 5 is out of range", "has 5 documents (0..4)"}, "cat", dir, "--doc", "5")
	wantFailure(t, 1, []string{"document 0 is out of range", "has no documents"}, "cat", emptyDataset(t), "--doc", "0")
	wantFailure(t, 2, []string{"--doc K is required"}, "cat", dir)
	wantFailure(t, 2, []string{"--doc K is required"}, "cat", dir)
	wantFailure(t, 2, []string{"--doc -1: a document index is 0, 1"}, "cat", dir, "--doc", "-1")
	wantFailure(t, 2, []string{"--tokenizer applies only with --decode"}, "cat", dir, "--doc", "0", "--tokenizer", "gpt2")

	// A bare prefix.
	if got := catIDs(t, filepath.Join(dir, "data_text_document_002.bin"), 0); !slices.Equal(got, []int{4, 5, 6}) {
		t.Errorf("cat of a bare prefix: %v", got)
	}
	wantFailure(t, 1, []string{"pass --tokenizer"}, "cat", filepath.Join(dir, "data_text_document_002"), "--doc", "0", "--decode")
}

// TestCatRefusesIDsOutsideTheVocabulary: a document holding an id its manifest's
// tokenizer does not have (a flipped .bin byte) is refused, naming the .bin, the byte
// and `shards verify`; its ids were printed as they were.
func TestCatRefusesIDsOutsideTheVocabulary(t *testing.T) {
	dir := t.TempDir()
	info := shards.TokenizerInfo{Name: "small", Fingerprint: strings.Repeat("a", 64), VocabSize: 100, EODID: -1}
	writeDataset(t, dir, info, [][]int{{1, 2}}, [][]int{{3}, {4, 5, 99}})
	if got := catIDs(t, dir, 2); !slices.Equal(got, []int{4, 5, 99}) {
		t.Fatalf("cat --doc 2 = %v", got)
	}
	bin := filepath.Join(dir, "data_text_document_001.bin")
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] = 0xff // uint16 99 -> 65379
	os.WriteFile(bin, data, 0o644)
	wantFailure(t, 1, []string{bin + ": byte 6 (document 1 of the shard, token 2): id 65379 is outside the vocabulary [0,100)", "shards verify " + dir}, "cat", dir, "--doc", "2")
	if got := catIDs(t, dir, 1); !slices.Equal(got, []int{3}) {
		t.Fatalf("cat --doc 1 = %v", got)
	}
	// A bare int32 shard names no vocabulary, but a negative id is no token of any.
	bare := filepath.Join(t.TempDir(), "b_text_document")
	var idx strings.Builder
	if err := shards.WriteIndex(&idx, shards.Int32, []int32{2}, nil); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(bare+".idx", []byte(idx.String()), 0o644)
	os.WriteFile(bare+".bin", []byte{5, 0, 0, 0, 0xff, 0xff, 0xff, 0xff}, 0o644)
	wantFailure(t, 1, []string{bare + ".bin: byte 4 (document 0, token 1): negative token id -1", "the .bin is damaged"}, "cat", bare, "--doc", "0")
	// verify names the kind: a negative id, not one outside a vocabulary it has none of.
	out, _ := wantFailure(t, 1, nil, "verify", bare)
	if want := "error: " + bare + ".bin: negative token id at byte 4 (document 0, token 1): token id -1 is negative"; !strings.Contains(out, want) || strings.Contains(out, "vocabulary") {
		t.Errorf("verify of a negative id printed %q, want %q", out, want)
	}
}

func emptyDataset(t *testing.T) string {
	dir := t.TempDir()
	writeDataset(t, dir, gpt2Info(t))
	return dir
}

func TestCatDecode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sample")
	want := tokenizeDataset(t, dir, sampleTexts)
	spec := testfiles.Path(t, "tokenizers/gpt2")
	for k, text := range slices.DeleteFunc(slices.Clone(sampleTexts), func(s string) bool { return s == "" }) {
		if got := catIDs(t, dir, k); !slices.Equal(got, want[k]) {
			t.Errorf("cat --doc %d = %v, want %v", k, got, want[k])
		}
		if got := catText(t, dir, "--doc", fmt.Sprint(k), "--tokenizer", spec); got != text+"<|endoftext|>" {
			t.Errorf("cat --doc %d --decode = %q, want %q", k, got, text+"<|endoftext|>")
		}
	}
	out := mustRun(t, "cat", dir, "--doc", "2", "--decode", "--tokenizer", spec)
	if !strings.Contains(out, `<tags> & \"quotes\"`) {
		t.Errorf("cat --decode escapes HTML or mangles quotes: %s", out)
	}

	// Without --tokenizer, the manifest's tokenizer: the built-in gpt2, with no network
	// (every proxy leads nowhere) and an empty tokenizer cache.
	offline(t)
	cache := t.TempDir()
	if got := catText(t, dir, "--doc", "1", "--tokenizer-cache-dir", cache); got != sampleTexts[1]+"<|endoftext|>" {
		t.Errorf("cat --decode with the dataset's tokenizer = %q", got)
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("cat --decode downloaded %v", entries)
	}
}

// offline points every HTTP proxy at a closed port, so that any download fails.
func offline(t *testing.T) {
	for _, v := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		t.Setenv(v, "http://127.0.0.1:1")
	}
	t.Setenv("NO_PROXY", "")
	t.Setenv("no_proxy", "")
}

// TestCatDecodeCharsBesideTheData: a dataset prep shakespeare made (its character
// vocabulary in chars.json beside the shards) decodes with no --tokenizer, offline.
func TestCatDecodeCharsBesideTheData(t *testing.T) {
	offline(t)
	chars := tokenize.NewCharsFromText("First Citizen:\nBefore we proceed", "shakespeare-char")
	dir := t.TempDir()
	writeDataset(t, dir, tokenizerInfo(chars), [][]int{chars.Encode("Before we proceed"), chars.Encode("First Citizen:\n")})
	data, err := chars.MarshalChars()
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "chars.json"), data, 0o644)
	if got := catText(t, dir, "--doc", "1"); got != "First Citizen:\n" {
		t.Errorf("cat --decode = %q", got)
	}
	// A chars.json that is not the manifest's: named in the error.
	other, _ := tokenize.NewCharsFromText("abc", "x").MarshalChars()
	os.WriteFile(filepath.Join(dir, "chars.json"), other, 0o644)
	wantFailure(t, 1, []string{"chars.json has fingerprint", "shakespeare-char", "pass --tokenizer SPEC"}, "cat", dir, "--doc", "0", "--decode")
}

func TestCatDecodeTokenizerByName(t *testing.T) {
	char := tokenize.NewNeoXChar()
	ids := append(char.Encode("héllo"), char.EOD())

	dir := t.TempDir()
	writeDataset(t, dir, tokenizerInfo(char), [][]int{ids})
	if got := catText(t, dir, "--doc", "0"); got != "héllo\x00" {
		t.Errorf("cat --decode by the manifest's name = %q", got)
	}

	// An explicit --tokenizer that is not the dataset's: decoded, with a warning.
	code, out, errOut := runShards(t, "cat", dir, "--doc", "0", "--decode", "--tokenizer", testfiles.Path(t, "tokenizers/gpt2"))
	if code != 0 || out == "" || !strings.Contains(errOut, "differs from the dataset's tokenizer") {
		t.Errorf("cat --decode with another tokenizer: exit %d, %q, %q", code, out, errOut)
	}

	// A known name with another fingerprint, and an unknown name: --tokenizer is needed.
	forged := tokenizerInfo(char)
	forged.Fingerprint = strings.Repeat("0", 64)
	dir = t.TempDir()
	writeDataset(t, dir, forged, [][]int{ids})
	wantFailure(t, 1, []string{"fingerprint 000000000000", "pass --tokenizer SPEC"}, "cat", dir, "--doc", "0", "--decode")
	if got := catIDs(t, dir, 0); !slices.Equal(got, ids) {
		t.Errorf("cat without --decode needs no tokenizer: %v", got)
	}

	custom := tokenizerInfo(char)
	custom.Name = "my-chars"
	dir = t.TempDir()
	writeDataset(t, dir, custom, [][]int{ids})
	wantFailure(t, 1, []string{`"my-chars" is not a known tokenizer name`, "pass --tokenizer SPEC"}, "cat", dir, "--doc", "0", "--decode")
}

func TestCatDecodeRejectsForeignIDs(t *testing.T) {
	alphabet := tokenize.NewCharsFromText("ab", "ab")
	path := filepath.Join(t.TempDir(), "chars.json")
	data, _ := alphabet.MarshalChars()
	os.WriteFile(path, data, 0o644)
	dir := t.TempDir()
	writeDataset(t, dir, shards.TokenizerInfo{Name: "big", Fingerprint: strings.Repeat("a", 64), VocabSize: 100, EODID: -1}, [][]int{{0, 1, 99}})
	wantFailure(t, 1, []string{"token 2: id 99 is not a token of", "not the dataset's tokenizer big"}, "cat", dir, "--doc", "0", "--decode", "--tokenizer", path)
}

// unreadableStore is a remote-like store (no local paths) whose key bad cannot be
// opened (openErr) or read (readErr).
type unreadableStore struct {
	storage.Store
	bad              string
	openErr, readErr error
}

func (s unreadableStore) LocalPath(string) (string, bool) { return "", false }

func (s unreadableStore) Open(ctx context.Context, key string) (storage.Object, error) {
	if key != s.bad {
		return s.Store.Open(ctx, key)
	}
	if s.openErr != nil {
		return nil, s.openErr
	}
	obj, err := s.Store.Open(ctx, key)
	if err != nil {
		return nil, err
	}
	return failingObject{obj, s.readErr}, nil
}

type failingObject struct {
	storage.Object
	err error
}

func (o failingObject) Read([]byte) (int, error) { return 0, o.err }

// TestCatDecodeUnreadableTokenizerFile: a tokenizer file stored beside a remote dataset
// that cannot be opened or read is named in a warning, and the tokenizer the manifest
// names is tried next; an unopenable one was skipped silently (a read failure failed
// the command), so a decode with the wrong tokenizer, or a failure naming the built-in
// only, gave no hint of the file.
func TestCatDecodeUnreadableTokenizerFile(t *testing.T) {
	ctx := context.Background()
	char := tokenize.NewNeoXChar()
	dir := t.TempDir()
	writeDataset(t, dir, tokenizerInfo(char), [][]int{char.Encode("hi")})
	data, _ := char.MarshalChars()
	os.WriteFile(filepath.Join(dir, "chars.json"), data, 0o644)
	info := tokenizerInfo(char)
	for _, tt := range []struct {
		name             string
		openErr, readErr error
	}{
		{"open", fmt.Errorf("open chars.json: %w", fs.ErrPermission), nil},
		{"read", nil, errors.New("connection reset by peer")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := unreadableStore{openStore(t, dir), "chars.json", tt.openErr, tt.readErr}
			var stderr strings.Builder
			tok, err := catTokenizer(ctx, &tokenizerFlags{}, target{store: st}, &info, nil, &stderr)
			if err != nil {
				t.Fatalf("catTokenizer: %v (want the name's tokenizer)", err)
			}
			if tok.Fingerprint() != info.Fingerprint {
				t.Errorf("tokenizer %s, want the manifest's %s", tok.Name(), info.Name)
			}
			lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
			if len(lines) != 1 || !strings.Contains(lines[0], "WARN") || !strings.Contains(lines[0], "file=chars.json") || !strings.Contains(lines[0], dir) {
				t.Errorf("stderr %q, want one warning naming chars.json and %s", stderr.String(), dir)
			}
		})
	}
}

// TestCatDecodeRemoteTokenizerFileNamed: a tokenizer file beside a remote dataset that
// is not the manifest's tokenizer is named where it is (the store's location) in the
// error of cat --decode and the warning of convert --to nanogpt; both named the
// temporary copy it was fetched into (/tmp/gptkit-tokenizer-N/chars.json), gone once
// the command ended.
func TestCatDecodeRemoteTokenizerFileNamed(t *testing.T) {
	ctx := context.Background()
	char := tokenize.NewNeoXChar()
	dir := t.TempDir()
	info := tokenizerInfo(char)
	info.Name = "mychars" // no built-in of that name: the file beside the data alone
	writeDataset(t, dir, info, [][]int{char.Encode("hi")})
	os.WriteFile(filepath.Join(dir, "chars.json"), []byte(`{"type": "char", "chars": ["x", "y"]}`), 0o644)
	st := unreadableStore{openStore(t, dir), "", nil, nil}
	want := filepath.Join(dir, "chars.json")

	_, err := catTokenizer(ctx, &tokenizerFlags{}, target{store: st}, &info, nil, io.Discard)
	if err == nil || strings.Contains(err.Error(), "gptkit-tokenizer-") || !strings.Contains(err.Error(), want) {
		t.Errorf("catTokenizer: %v, want an error naming %s", err, want)
	}
	var log strings.Builder
	if _, err := nanoGPTMeta(ctx, st, info, nil, slog.New(slog.NewTextHandler(&log, nil))); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(log.String(), "gptkit-tokenizer-") || !strings.Contains(log.String(), want) {
		t.Errorf("nanoGPTMeta warned %q, want it to name %s", log.String(), want)
	}
}

// TestInfoDoesNotLoadANonIndex: `shards info PREFIX` whose .idx is no index (the .bin
// in its place: gigabytes) refuses it from its first bytes; it read the file into
// memory whole first.
func TestInfoDoesNotLoadANonIndex(t *testing.T) {
	prefix := filepath.Join(t.TempDir(), "x_text_document")
	os.WriteFile(prefix+".idx", make([]byte, 64<<20), 0o644)
	os.WriteFile(prefix+".bin", nil, 0o644)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	wantFailure(t, 1, []string{"x_text_document.idx: byte 0 (magic)"}, "info", prefix)
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Fatalf("info allocated %d MiB for a 64 MiB non-index", got>>20)
	}
}

// TestSwappedFilesHint: a shard whose .bin and .idx were swapped (a rename gone
// wrong) gets the hint to swap them back from info as from verify and cat; info gave
// the generic "is this an .idx file" hint.
func TestSwappedFilesHint(t *testing.T) {
	dir := t.TempDir()
	w, err := shards.NewWriter(context.Background(), openStore(t, dir), "x_text_document", shards.Uint16)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range [][]int{{1, 2, 3}, {4, 5}} {
		if err := w.AddDocument(d); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(dir, "x_text_document")
	if err := os.Rename(prefix+".bin", prefix+".tmp"); err != nil {
		t.Fatal(err)
	}
	os.Rename(prefix+".idx", prefix+".bin")
	os.Rename(prefix+".tmp", prefix+".idx")
	hint := "the shard's two files are swapped: " + prefix + ".bin holds the index"
	for _, args := range [][]string{{"info", prefix}, {"verify", prefix}, {"cat", prefix, "--doc", "0"}} {
		wantFailure(t, 1, []string{prefix + ".idx", "magic", hint}, args...)
	}
}
