package spec

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"gptkit/internal/testfiles"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gptkit/tokenize"
)

// checkGolden encodes the first lines of golden/<golden>-public.jsonl with tok and
// compares the ids with the recorded ones.
func checkGolden(t *testing.T, tok *tokenize.Tokenizer, golden string) {
	t.Helper()
	f, err := os.Open(testfiles.Path(t, "golden/"+golden+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for line := 1; line <= 5 && sc.Scan(); line++ {
		var doc struct {
			Text string `json:"text"`
			IDs  []int  `json:"ids"`
		}
		if err := json.Unmarshal(sc.Bytes(), &doc); err != nil {
			t.Fatalf("golden line %d: %v", line, err)
		}
		if got := tok.Encode(doc.Text); !slices.Equal(got, doc.IDs) {
			t.Fatalf("golden %s line %d: ids differ:\n got %v\nwant %v", golden, line, got, doc.IDs)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// symlinks makes a temporary directory holding links named after the keys to the
// shared files given as values.
func symlinks(t *testing.T, links map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, rel := range links {
		if err := os.Symlink(testfiles.Path(t, rel), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func writeChars(t *testing.T, dir, text string) string {
	t.Helper()
	data, err := tokenize.NewCharsFromText(text, "test").MarshalChars()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "chars.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLoadEveryKindOfPath(t *testing.T) {
	tests := []struct {
		name   string
		spec   func(t *testing.T) string
		golden string // golden file the tokenizer must reproduce
		vocab  int
		eod    int
	}{
		{"dir with tokenizer.json", func(t *testing.T) string { return testfiles.Path(t, "tokenizers/gpt2") }, "gpt2", 50257, 50256},
		{"tokenizer.json", func(t *testing.T) string { return testfiles.Path(t, "tokenizers/gpt2/tokenizer.json") }, "gpt2", 50257, 50256},
		{"dir with vocab.json and merges.txt", func(t *testing.T) string {
			return symlinks(t, map[string]string{"vocab.json": "tokenizers/gpt2/vocab.json", "merges.txt": "tokenizers/gpt2/merges.txt"})
		}, "gpt2", 50257, 50256},
		{"vocab.json beside merges.txt", func(t *testing.T) string { return testfiles.Path(t, "tokenizers/gpt2/vocab.json") }, "gpt2", 50257, 50256},
		{"merges.txt beside vocab.json", func(t *testing.T) string { return testfiles.Path(t, "tokenizers/gpt2/merges.txt") }, "gpt2", 50257, 50256},
		{"neox-20b dir", func(t *testing.T) string { return testfiles.Path(t, "tokenizers/neox-20b") }, "neox-20b", 50277, 0},
		{"tokenizer.json under another name", func(t *testing.T) string {
			return filepath.Join(symlinks(t, map[string]string{"20B_tokenizer.json": "tokenizers/neox-20b/tokenizer.json"}), "20B_tokenizer.json")
		}, "neox-20b", 50277, 0},
		{"cl100k_base.tiktoken", func(t *testing.T) string { return testfiles.Path(t, "tokenizers/tiktoken/cl100k_base.tiktoken") }, "cl100k_base", 100277, 100257},
		{"o200k_base.tiktoken", func(t *testing.T) string { return testfiles.Path(t, "tokenizers/tiktoken/o200k_base.tiktoken") }, "o200k_base", 200019, 199999},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := Load(context.Background(), tt.spec(t), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tok.VocabSize() != tt.vocab || tok.EOD() != tt.eod {
				t.Errorf("vocab size %d, EOD %d; want %d, %d", tok.VocabSize(), tok.EOD(), tt.vocab, tt.eod)
			}
			checkGolden(t, tok, tt.golden)
		})
	}
}

func TestLoadTokenizerNames(t *testing.T) {
	// A tokenizer of its own (no built-in's fingerprint) is named by its file.
	m, err := tokenize.Train(context.Background(), tokenize.TrainTexts([]string{strings.Repeat("the cat sat on the mat. ", 50)}),
		tokenize.TrainOptions{VocabSize: 270, Special: []string{"<|endoftext|>"}})
	if err != nil {
		t.Fatal(err)
	}
	var hf bytes.Buffer
	if err := m.WriteHFJSON(&hf); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "mytok")
	os.Mkdir(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "20B_tokenizer.json"), hf.Bytes(), 0o644)
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), hf.Bytes(), 0o644)
	tok, err := Load(context.Background(), filepath.Join(dir, "20B_tokenizer.json"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Name() != "20B_tokenizer" {
		t.Errorf("name %q, want the file's stem", tok.Name())
	}
	tok, err = Load(context.Background(), filepath.Join(dir, "tokenizer.json"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Name() != "mytok" {
		t.Errorf("name %q, want the directory's name for a tokenizer.json", tok.Name())
	}
	// A copy of a built-in's file, by any name, is the built-in (TestLoadCopyOfBuiltin).
	links := symlinks(t, map[string]string{"20B_tokenizer.json": "tokenizers/neox-20b/tokenizer.json"})
	tok, err = Load(context.Background(), filepath.Join(links, "20B_tokenizer.json"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Name() != "neox-20b" {
		t.Errorf("name %q, want the built-in's", tok.Name())
	}
}

// TestLoadCopyOfBuiltin: a tokenizer loaded from a copy of a built-in's files (Hugging
// Face's gpt2 vocab.json and merges.txt in a directory of another name; OpenAI's
// r50k_base.tiktoken, also named gpt2.tiktoken, whose ranks are GPT-2's ids) is the
// built-in: its name and fingerprint, which a dataset's manifest records and its
// readers load by name, so that nothing is stored beside it. (The directory's name was
// recorded, which no reader knew without the files stored beside every dataset; the
// rank file's fingerprint was not the built-in's, built from vocab.json and merges.txt.)
// A rank file that differs in one rank is not.
func TestLoadCopyOfBuiltin(t *testing.T) {
	ctx := context.Background()
	gpt2, err := LoadName(ctx, "gpt2", Options{})
	if err != nil {
		t.Fatal(err)
	}
	src := t.TempDir()
	dir := filepath.Join(src, "my-gpt2")
	os.Mkdir(dir, 0o755)
	for _, f := range []string{"vocab.json", "merges.txt"} {
		os.WriteFile(filepath.Join(dir, f), testfiles.Read(t, "tokenizers/gpt2/"+f), 0o644)
	}
	// OpenAI's r50k_base.tiktoken: each of GPT-2's tokens, base64, and its id.
	var ranks bytes.Buffer
	for id := range 50256 {
		fmt.Fprintf(&ranks, "%s %d\n", base64.StdEncoding.EncodeToString(gpt2.TokenBytes(id)), id)
	}
	if sum := sha256.Sum256(ranks.Bytes()); hex.EncodeToString(sum[:]) != "306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930" {
		t.Fatalf("the rank file made is not OpenAI's (sha256 %x)", sum)
	}
	os.WriteFile(filepath.Join(src, "r50k_base.tiktoken"), ranks.Bytes(), 0o644)
	os.WriteFile(filepath.Join(src, "gpt2.tiktoken"), ranks.Bytes(), 0o644)
	other := bytes.Replace(ranks.Bytes(), []byte("\n"+base64.StdEncoding.EncodeToString(gpt2.TokenBytes(300))+" 300\n"), []byte("\n"+base64.StdEncoding.EncodeToString([]byte("zzzq"))+" 300\n"), 1)
	if bytes.Equal(other, ranks.Bytes()) {
		t.Fatal("rank 300 not replaced")
	}
	os.Mkdir(filepath.Join(src, "other"), 0o755)
	os.WriteFile(filepath.Join(src, "other", "r50k_base.tiktoken"), other, 0o644)

	for _, tc := range []struct{ spec, want string }{
		{dir, "gpt2"},
		{filepath.Join(dir, "vocab.json"), "gpt2"},
		{filepath.Join(src, "r50k_base.tiktoken"), "r50k_base"},
		{filepath.Join(src, "gpt2.tiktoken"), "gpt2"},
	} {
		tok, err := Load(ctx, tc.spec, Options{})
		if err != nil {
			t.Fatal(err)
		}
		builtin, err := LoadName(ctx, tc.want, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if tok.Name() != tc.want || tok.Fingerprint() != builtin.Fingerprint() {
			t.Errorf("%s: %s with fingerprint %.12s, want the built-in %s's %.12s", tc.spec, tok.Name(), tok.Fingerprint(), tc.want, builtin.Fingerprint())
		}
		if got, want := tok.Encode("Hello world, it's 2024!"), gpt2.Encode("Hello world, it's 2024!"); !slices.Equal(got, want) {
			t.Errorf("%s: ids %v, want %v", tc.spec, got, want)
		}
	}
	// A dataset made before (its manifest records the rank file's own fingerprint,
	// and the file is stored beside it) still finds it: the files beside a dataset
	// are read as they are.
	raw, err := tokenize.LoadTiktoken(ranks.Bytes(), "r50k_base")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ForDataset(ctx, src, "r50k_base", raw.Fingerprint(), Options{}); err != nil || got.Fingerprint() != raw.Fingerprint() {
		t.Errorf("a dataset made with the rank file's own fingerprint: %v", err)
	}
	tok, err := Load(ctx, filepath.Join(src, "other", "r50k_base.tiktoken"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tok.Fingerprint() == gpt2.Fingerprint() || tok.TokenBytes(300) == nil || string(tok.TokenBytes(300)) != "zzzq" {
		t.Errorf("a vocabulary of its own taken for the built-in (fingerprint %.12s)", tok.Fingerprint())
	}
}

func TestLoadChars(t *testing.T) {
	dir := t.TempDir()
	path := writeChars(t, dir, "hello world")
	for _, spec := range []string{path, dir} {
		tok, err := Load(context.Background(), spec, Options{})
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		ids, err := tok.EncodeChecked("hello")
		if err != nil {
			t.Fatal(err)
		}
		if got := tok.Decode(ids); got != "hello" || tok.VocabSize() != 8 {
			t.Errorf("%s: round trip %q, vocab %d; want \"hello\", 8", spec, got, tok.VocabSize())
		}
		if _, err := tok.EncodeChecked("hello!"); err == nil {
			t.Errorf("%s: a character outside the vocabulary encoded without error", spec)
		}
	}
	// A JSON character vocabulary under another name is found by its content.
	other := filepath.Join(dir, "vocab-shakespeare.json")
	if err := os.Rename(path, other); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(context.Background(), other, Options{}); err != nil {
		t.Fatal(err)
	}
}

func TestLoadCharNameNeedsNoFile(t *testing.T) {
	cache := t.TempDir()
	tok, err := Load(context.Background(), "char", Options{CacheDir: cache})
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 512 || tok.EOD() != 0 {
		t.Errorf("vocab %d, EOD %d; want 512, 0", tok.VocabSize(), tok.EOD())
	}
	if got := tok.Encode("hé"); !slices.Equal(got, []int{'h', 0xC3, 0xA9}) {
		t.Errorf("ids %v, want the UTF-8 bytes", got)
	}
	if entries, _ := os.ReadDir(cache); len(entries) != 0 {
		t.Errorf("char wrote to the cache: %v", entries)
	}
}

func TestNames(t *testing.T) {
	want := []string{"gpt2", "r50k_base", "neox-20b", "cl100k_base", "o200k_base", "char"}
	if got := Names(); !slices.Equal(got, want) {
		t.Errorf("Names() = %v, want %v", got, want)
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	badTiktoken := filepath.Join(dir, "mine.tiktoken")
	if err := os.Symlink(testfiles.Path(t, "tokenizers/tiktoken/cl100k_base.tiktoken"), badTiktoken); err != nil {
		t.Fatal(err)
	}
	empty := t.TempDir()
	lonelyVocab := symlinks(t, map[string]string{"vocab.json": "tokenizers/gpt2/vocab.json"})
	notTokenizer := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notTokenizer, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		spec string
		opt  Options
		want []string // substrings of the error
	}{
		{"empty", "", Options{}, []string{"empty tokenizer SPEC", "gpt2"}},
		{"unknown name", "gpt3", Options{}, []string{`"gpt3"`, "gpt2, r50k_base, neox-20b, cl100k_base, o200k_base, char"}},
		{"missing path", filepath.Join(dir, "nope", "tokenizer.json"), Options{}, []string{"neither an existing file"}},
		{"tiktoken name", badTiktoken, Options{}, []string{badTiktoken, "cl100k_base", "o200k_base", "rename the file"}},
		{"empty dir", empty, Options{}, []string{empty, "tokenizer.json", "merges.txt", "chars.json"}},
		{"vocab without merges", lonelyVocab, Options{}, []string{"no merges.txt"}},
		{"not a tokenizer", notTokenizer, Options{}, []string{notTokenizer, "not a tokenizer file"}},
		{"URL with a path", empty, Options{URL: "http://127.0.0.1:1/x"}, []string{"local path"}},
		{"URL with char", "char", Options{URL: "http://127.0.0.1:1/x"}, []string{"needs no file"}},
		{"bad URL scheme", "neox-20b", Options{URL: "ftp://example.com/x", CacheDir: dir}, []string{"http://"}},
		{"bad sha256", "neox-20b", Options{SHA256: "abc", CacheDir: dir}, []string{"64 hex digits"}},
		{"one sha256 for two files", "gpt2", Options{SHA256: strings.Repeat("a", 64), CacheDir: dir}, []string{"2 files", "vocab.json, merges.txt"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(context.Background(), tt.spec, tt.opt)
			if err == nil {
				t.Fatal("no error")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not contain %q", err, want)
				}
			}
		})
	}
}

func TestDefaultCacheDir(t *testing.T) {
	t.Setenv("GPTKIT_CACHE", "/somewhere")
	if dir, err := DefaultCacheDir(); err != nil || dir != filepath.Join("/somewhere", "tokenizers") {
		t.Errorf("DefaultCacheDir() = %q, %v", dir, err)
	}
	t.Setenv("GPTKIT_CACHE", "")
	if dir, err := DefaultCacheDir(); err == nil && !strings.HasSuffix(dir, filepath.Join("gptkit", "tokenizers")) {
		t.Errorf("DefaultCacheDir() = %q", dir)
	}
}

func TestPathWinsOverName(t *testing.T) {
	dir := t.TempDir()
	writeChars(t, filepath.Join(dir), "abc")
	if err := os.Mkdir(filepath.Join(dir, "gpt2"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(filepath.Join(dir, "chars.json"), filepath.Join(dir, "gpt2", "chars.json")); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	tok, err := Load(context.Background(), "gpt2", Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 3 {
		t.Errorf("vocab size %d: the name won over the directory ./gpt2", tok.VocabSize())
	}
	// LoadName takes the name alone (the built-in a manifest's name means).
	if tok, err := LoadName(context.Background(), "gpt2", Options{}); err != nil || tok.VocabSize() != 50257 {
		t.Errorf("LoadName(gpt2) beside a directory ./gpt2: %v", err)
	}
	if _, err := LoadName(context.Background(), "chars.json", Options{}); err == nil || !strings.Contains(err.Error(), "not a known tokenizer name") {
		t.Errorf("LoadName of a path: %v, want not a known name", err)
	}
}

// tokenizerServer serves the shared tokenizer files on 127.0.0.1 and counts requests.
type tokenizerServer struct {
	*httptest.Server
	files map[string][]byte // URL path -> content

	mu       sync.Mutex
	requests []string // "PATH RANGE" of every request, in order
	// serve, if set, answers request n (0-based, counting every path) instead of
	// http.ServeContent.
	serve func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool
}

func newTokenizerServer(t *testing.T) *tokenizerServer {
	t.Helper()
	s := &tokenizerServer{files: map[string][]byte{
		"/gpt2/vocab.json":               testfiles.Read(t, "tokenizers/gpt2/vocab.json"),
		"/gpt2/merges.txt":               testfiles.Read(t, "tokenizers/gpt2/merges.txt"),
		"/gpt2/tokenizer.json":           testfiles.Read(t, "tokenizers/gpt2/tokenizer.json"),
		"/neox-20b/tokenizer.json":       testfiles.Read(t, "tokenizers/neox-20b/tokenizer.json"),
		"/tiktoken/cl100k_base.tiktoken": testfiles.Read(t, "tokenizers/tiktoken/cl100k_base.tiktoken"),
		"/tiktoken/o200k_base.tiktoken":  testfiles.Read(t, "tokenizers/tiktoken/o200k_base.tiktoken"),
	}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		n := len(s.requests)
		s.requests = append(s.requests, strings.TrimSpace(r.URL.Path+" "+r.Header.Get("Range")))
		serve := s.serve
		s.mu.Unlock()
		content, ok := s.files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if serve != nil && serve(w, r, n, content) {
			return
		}
		http.ServeContent(w, r, filepath.Base(r.URL.Path), time.Time{}, bytes.NewReader(content))
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *tokenizerServer) log() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// dropHalfway sends a full Content-Length, half of the body, then cuts the connection.
func dropHalfway(w http.ResponseWriter, content []byte) {
	w.Header().Set("Content-Length", strconv.Itoa(len(content)))
	w.WriteHeader(http.StatusOK)
	w.Write(content[:len(content)/2])
	http.NewResponseController(w).Flush()
	panic(http.ErrAbortHandler)
}

// noFile fails the test if path, or its .part, exists.
func noFile(t *testing.T, path string) {
	t.Helper()
	for _, p := range []string{path, path + ".part"} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s exists (stat error %v)", p, err)
		}
	}
}

func TestDownloadOnceThenCache(t *testing.T) {
	srv := newTokenizerServer(t)
	tests := []struct {
		name, url string
		files     []string // cache files, relative to the cache root
		requests  []string
		golden    string
	}{
		{"gpt2", srv.URL + "/gpt2/", []string{"gpt2/vocab.json", "gpt2/merges.txt"}, []string{"/gpt2/vocab.json", "/gpt2/merges.txt"}, "gpt2"},
		{"neox-20b", srv.URL + "/neox-20b/tokenizer.json", []string{"neox-20b/tokenizer.json"}, []string{"/neox-20b/tokenizer.json"}, "neox-20b"},
		{"cl100k_base", srv.URL + "/tiktoken/cl100k_base.tiktoken", []string{"cl100k_base/cl100k_base.tiktoken"}, []string{"/tiktoken/cl100k_base.tiktoken"}, "cl100k_base"},
		{"o200k_base", srv.URL + "/tiktoken/o200k_base.tiktoken", []string{"o200k_base/o200k_base.tiktoken"}, []string{"/tiktoken/o200k_base.tiktoken"}, "o200k_base"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.mu.Lock()
			srv.requests = nil
			srv.mu.Unlock()
			cache := t.TempDir()
			var lastProgress atomic.Int64
			opt := Options{CacheDir: cache, URL: tt.url, Progress: func(p Progress) { lastProgress.Store(p.Done) }}
			tok, err := Load(context.Background(), tt.name, opt)
			if err != nil {
				t.Fatal(err)
			}
			checkGolden(t, tok, tt.golden)
			if got := srv.log(); !slices.Equal(got, tt.requests) {
				t.Errorf("requests %v, want %v", got, tt.requests)
			}
			last := tt.files[len(tt.files)-1]
			if info, err := os.Stat(filepath.Join(cache, last)); err != nil || info.Size() != lastProgress.Load() {
				t.Errorf("last progress %d bytes, file %v (%v)", lastProgress.Load(), info, err)
			}
			for _, f := range tt.files {
				if _, err := os.Stat(filepath.Join(cache, f+".part")); !errors.Is(err, fs.ErrNotExist) {
					t.Errorf("%s.part left behind", f)
				}
			}
			again, err := Load(context.Background(), tt.name, opt)
			if err != nil {
				t.Fatal(err)
			}
			if got := srv.log(); len(got) != len(tt.requests) {
				t.Errorf("the second Load made requests: %v", got[len(tt.requests):])
			}
			if again.Fingerprint() != tok.Fingerprint() {
				t.Errorf("fingerprint changed between loads")
			}
		})
	}
}

func TestR50kBaseSharesTheGPT2Cache(t *testing.T) {
	srv := newTokenizerServer(t)
	cache := t.TempDir()
	opt := Options{CacheDir: cache, URL: srv.URL + "/gpt2"}
	gpt2, err := Load(context.Background(), "gpt2", opt)
	if err != nil {
		t.Fatal(err)
	}
	r50k, err := Load(context.Background(), "r50k_base", opt)
	if err != nil {
		t.Fatal(err)
	}
	if got := srv.log(); len(got) != 2 {
		t.Errorf("requests %v, want only gpt2's two files", got)
	}
	if r50k.Name() != "r50k_base" || r50k.VocabSize() != gpt2.VocabSize() {
		t.Errorf("r50k_base: name %q, vocab %d", r50k.Name(), r50k.VocabSize())
	}
}

func TestDownloadSHA256Mismatch(t *testing.T) {
	srv := newTokenizerServer(t)
	srv.files["/tiktoken/cl100k_base.tiktoken"] = []byte("not the real file\n")
	cache := t.TempDir()
	url := srv.URL + "/tiktoken/cl100k_base.tiktoken"
	_, err := Load(context.Background(), "cl100k_base", Options{CacheDir: cache, URL: url})
	if err == nil {
		t.Fatal("a file with the wrong sha256 loaded")
	}
	final := filepath.Join(cache, "cl100k_base", "cl100k_base.tiktoken")
	for _, want := range []string{url, "sha256", "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7", "by hand to " + final} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	noFile(t, final)
	if got := srv.log(); len(got) != 1 {
		t.Errorf("requests %v, want one", got)
	}
}

func TestDownloadSHA256Override(t *testing.T) {
	srv := newTokenizerServer(t)
	// Serve GPT-2's tokenizer.json as neox-20b: it loads only with its own digest.
	opt := Options{CacheDir: t.TempDir(), URL: srv.URL + "/gpt2/tokenizer.json"}
	if _, err := Load(context.Background(), "neox-20b", opt); err == nil || !strings.Contains(err.Error(), "sha256") {
		t.Fatalf("canonical digest: err = %v, want a sha256 mismatch", err)
	}
	opt.SHA256 = "F6ED3D307010C244C22AEFFBDE05F419CF277C23E64CF98B673CAC5449CFEFF5"
	tok, err := Load(context.Background(), "neox-20b", opt)
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 50257 {
		t.Errorf("vocab size %d, want GPT-2's 50257", tok.VocabSize())
	}
}

func TestDownloadResumesAfterDroppedConnection(t *testing.T) {
	srv := newTokenizerServer(t)
	srv.serve = func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		if n == 0 {
			dropHalfway(w, content)
		}
		return false
	}
	var logs bytes.Buffer
	cache := t.TempDir()
	opt := Options{CacheDir: cache, URL: srv.URL + "/neox-20b/tokenizer.json", Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	tok, err := Load(context.Background(), "neox-20b", opt)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, tok, "neox-20b")
	half := len(srv.files["/neox-20b/tokenizer.json"]) / 2
	want := []string{"/neox-20b/tokenizer.json", "/neox-20b/tokenizer.json bytes=" + strconv.Itoa(half) + "-"}
	if got := srv.log(); !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
	if !strings.Contains(logs.String(), "retrying") || !strings.Contains(logs.String(), "resuming") {
		t.Errorf("log lacks the retry and the resume:\n%s", logs.String())
	}
}

func TestDownloadRetriesWithoutRangeSupport(t *testing.T) {
	srv := newTokenizerServer(t)
	srv.serve = func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		switch n {
		case 0:
			dropHalfway(w, content)
		case 1:
			http.Error(w, "busy", http.StatusServiceUnavailable)
		default: // ignore Range: send the whole file
			w.Write(content)
		}
		return true
	}
	cache := t.TempDir()
	tok, err := Load(context.Background(), "cl100k_base", Options{CacheDir: cache, URL: srv.URL + "/tiktoken/cl100k_base.tiktoken"})
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, tok, "cl100k_base")
	if got := srv.log(); len(got) != 3 {
		t.Errorf("requests %v, want 3", got)
	}
}

func TestDownloadRestartsWhenResumedBytesAreStale(t *testing.T) {
	srv := newTokenizerServer(t)
	cache := t.TempDir()
	final := filepath.Join(cache, "o200k_base", "o200k_base.tiktoken")
	if err := os.MkdirAll(filepath.Dir(final), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(final+".part", bytes.Repeat([]byte("x"), 1000), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(context.Background(), "o200k_base", Options{CacheDir: cache, URL: srv.URL + "/tiktoken/o200k_base.tiktoken"})
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, tok, "o200k_base")
	want := []string{"/tiktoken/o200k_base.tiktoken bytes=1000-", "/tiktoken/o200k_base.tiktoken"}
	if got := srv.log(); !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}

func TestCorruptCacheIsFetchedAgain(t *testing.T) {
	srv := newTokenizerServer(t)
	cache := t.TempDir()
	var logs bytes.Buffer
	opt := Options{CacheDir: cache, URL: srv.URL + "/gpt2", Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	if _, err := Load(context.Background(), "gpt2", opt); err != nil {
		t.Fatal(err)
	}
	merges := filepath.Join(cache, "gpt2", "merges.txt")
	if err := os.WriteFile(merges, []byte("#version: 0.2\nĠ t\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := Load(context.Background(), "gpt2", opt)
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, tok, "gpt2")
	want := []string{"/gpt2/vocab.json", "/gpt2/merges.txt", "/gpt2/merges.txt"}
	if got := srv.log(); !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
	if !strings.Contains(logs.String(), "fails its sha256") {
		t.Errorf("the repair was not logged:\n%s", logs.String())
	}

	// When the repair fails too, the error says the cached copy was corrupt.
	if err := os.WriteFile(merges, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	delete(srv.files, "/gpt2/merges.txt")
	_, err = Load(context.Background(), "gpt2", opt)
	if err == nil || !strings.Contains(err.Error(), "cached copy") || !strings.Contains(err.Error(), "404") {
		t.Errorf("err = %v, want a 404 that mentions the corrupt cached copy", err)
	}
}

func TestDownloadNotFoundIsNotRetried(t *testing.T) {
	srv := newTokenizerServer(t)
	cache := t.TempDir()
	url := srv.URL + "/missing/tokenizer.json"
	_, err := Load(context.Background(), "neox-20b", Options{CacheDir: cache, URL: url})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{url, "404", "--tokenizer-url", "by hand"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not contain %q", err, want)
		}
	}
	if got := srv.log(); len(got) != 1 {
		t.Errorf("requests %v, want one", got)
	}
	noFile(t, filepath.Join(cache, "neox-20b", "tokenizer.json"))
}

func TestDownloadGivesUpAfterBoundedRetries(t *testing.T) {
	if testing.Short() {
		t.Skip("waits through every backoff")
	}
	srv := newTokenizerServer(t)
	srv.serve = func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		http.Error(w, "down", http.StatusBadGateway)
		return true
	}
	_, err := Load(context.Background(), "neox-20b", Options{CacheDir: t.TempDir(), URL: srv.URL + "/neox-20b/tokenizer.json"})
	if err == nil || !strings.Contains(err.Error(), "after 5 attempts") || !strings.Contains(err.Error(), "502") {
		t.Errorf("err = %v", err)
	}
	if got := srv.log(); len(got) != maxAttempts {
		t.Errorf("%d requests, want %d", len(got), maxAttempts)
	}
}

func TestDownloadStopsWhenContextIsDone(t *testing.T) {
	srv := newTokenizerServer(t)
	srv.serve = func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		http.Error(w, "down", http.StatusServiceUnavailable)
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := Load(ctx, "neox-20b", Options{CacheDir: t.TempDir(), URL: srv.URL + "/neox-20b/tokenizer.json"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the context's deadline", err)
	}
	if time.Since(start) > 2*time.Second {
		t.Errorf("took %v to notice the context", time.Since(start))
	}
}

func TestConcurrentLoadsDownloadOnce(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("the cache lock uses flock")
	}
	srv := newTokenizerServer(t)
	cache := t.TempDir()
	opt := Options{CacheDir: cache, URL: srv.URL + "/neox-20b/tokenizer.json"}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = Load(context.Background(), "neox-20b", opt)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := srv.log(); len(got) != 1 {
		t.Errorf("requests %v, want one", got)
	}
}

func TestParseContentRange(t *testing.T) {
	tests := []struct {
		in          string
		start, size int64
		ok          bool
	}{
		{"bytes 100-199/200", 100, 200, true},
		{"bytes 0-0/*", 0, -1, true},
		{"bytes */200", -1, 200, true},
		{"bytes 1-2", 0, 0, false},
		{"items 1-2/3", 0, 0, false},
		{"bytes x-2/3", 0, 0, false},
	}
	for _, tt := range tests {
		start, size, ok := parseContentRange(tt.in)
		if start != tt.start || size != tt.size || ok != tt.ok {
			t.Errorf("parseContentRange(%q) = %d, %d, %v; want %d, %d, %v", tt.in, start, size, ok, tt.start, tt.size, tt.ok)
		}
	}
}

// A truncated tokenizer.json (an interrupted download), in a directory or under
// another name, is named with its path, the byte where it stops and the next step.
func TestLoadTruncatedTokenizerJSON(t *testing.T) {
	data, err := os.ReadFile(testfiles.Path(t, "tokenizers/neox-20b/tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	inDir := filepath.Join(dir, "tokenizer.json")
	other := filepath.Join(dir, "mine.json")
	for _, c := range []struct {
		path string
		n    int
	}{{inDir, len(data) / 2}, {other, len(data) / 2}, {other, 40}} {
		if err := os.WriteFile(c.path, data[:c.n], 0o644); err != nil {
			t.Fatal(err)
		}
		spec := c.path
		if c.path == inDir {
			spec = dir
		}
		_, err := Load(context.Background(), spec, Options{})
		if err == nil {
			t.Fatalf("%s cut at %d: no error", spec, c.n)
		}
		for _, want := range []string{c.path, fmt.Sprintf("byte %d, the end of the file", c.n), "truncated", "download it again"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s cut at %d: error %q does not contain %q", spec, c.n, err, want)
			}
		}
	}
}
