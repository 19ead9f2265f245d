package prep

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gptkit/internal/fetch"
	"gptkit/internal/testfiles"
)

func TestCatalogIsWellFormed(t *testing.T) {
	names := map[string]string{} // name or alias -> corpus
	for _, c := range Catalog() {
		for _, n := range append([]string{c.Name}, c.Aliases...) {
			if n != strings.ToLower(n) || strings.ContainsAny(n, " /") || n == "" {
				t.Errorf("%s: name %q must be lower case, without spaces or slashes", c.Name, n)
			}
			if other, ok := names[n]; ok {
				t.Errorf("name %q used by both %s and %s", n, other, c.Name)
			}
			names[n] = c.Name
		}
		if n := strings.ToLower(c.Name); n == "list" || n == "custom" {
			t.Errorf("corpus name %q clashes with a prep subcommand", c.Name)
		}
		if c.Description == "" || c.Notes == "" || len(c.Files) == 0 {
			t.Errorf("%s: needs a description, notes and files", c.Name)
		}
		if c.DefaultTokenizer != "gpt2" && c.DefaultTokenizer != "char" {
			t.Errorf("%s: default tokenizer %q", c.Name, c.DefaultTokenizer)
		}
		seen := map[string]bool{}
		for _, f := range c.Files {
			checkCorpusFile(t, c.Name, f)
			if seen[f.Name] {
				t.Errorf("%s: %s listed twice", c.Name, f.Name)
			}
			seen[f.Name] = true
		}
	}
}

// checkCorpusFile checks one file of corpus: a clean relative name, a known split,
// a well-formed size and sha256, and http(s) sources that end in "/" + the name.
func checkCorpusFile(t *testing.T, corpus string, f CorpusFile) {
	t.Helper()
	if f.Name == "" || path.Clean(f.Name) != f.Name || path.IsAbs(f.Name) || strings.HasPrefix(f.Name, "../") || strings.Contains(f.Name, `\`) {
		t.Errorf("%s: file name %q is not a clean relative path", corpus, f.Name)
	}
	if f.Split != "train" && f.Split != "val" && f.Split != "test" {
		t.Errorf("%s/%s: split %q", corpus, f.Name, f.Split)
	}
	if f.Size < 0 {
		t.Errorf("%s/%s: size %d", corpus, f.Name, f.Size)
	}
	if b, err := hex.DecodeString(f.SHA256); f.SHA256 != "" && (err != nil || len(b) != 32 || strings.ToLower(f.SHA256) != f.SHA256) {
		t.Errorf("%s/%s: sha256 %q is not 64 lower-case hex digits", corpus, f.Name, f.SHA256)
	}
	if len(f.Sources) == 0 {
		t.Errorf("%s/%s: no source", corpus, f.Name)
	}
	for i, s := range f.Sources {
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			t.Errorf("%s/%s: source %q is not an http(s) URL", corpus, f.Name, s.URL)
		}
		if !strings.HasSuffix(s.URL, "/"+f.Name) {
			t.Errorf("%s/%s: source %q does not end in /%s, so its base is no --mirror", corpus, f.Name, s.URL, f.Name)
		}
		if s.Note == "" {
			t.Errorf("%s/%s: source %q has no note", corpus, f.Name, s.URL)
		}
		if s.Verified && f.SHA256 == "" {
			t.Errorf("%s/%s: source %q is marked verified, but there is no sha256 to verify against", corpus, f.Name, s.URL)
		}
		// Verified sources come first.
		if s.Verified && i > 0 && !f.Sources[i-1].Verified {
			t.Errorf("%s/%s: verified source %q comes after an unverified one", corpus, f.Name, s.URL)
		}
	}
}

// The relative names are part of the --mirror contract.
func TestCatalogMirrorNames(t *testing.T) {
	var pile []string
	for i := range 30 {
		pile = append(pile, fmt.Sprintf("train/%02d.jsonl.zst", i))
	}
	pile = append(pile, "val.jsonl.zst", "test.jsonl.zst")
	want := map[string][]string{
		"pile":        pile,
		"pile-00":     {"train/00.jsonl.zst"},
		"enron":       {"enron_emails.jsonl.zst"},
		"enwik8":      {"enwik8.zip"},
		"shakespeare": {"input.txt"},
	}
	if got := CorpusNames(); !slices.Equal(got, []string{"pile", "pile-00", "enron", "enwik8", "shakespeare"}) {
		t.Errorf("CorpusNames() = %v", got)
	}
	for name, files := range want {
		c, ok := LookupCorpus(name)
		if !ok {
			t.Fatalf("%s is not in the catalog", name)
		}
		var got []string
		for _, f := range c.Files {
			got = append(got, f.Name)
		}
		if !slices.Equal(got, files) {
			t.Errorf("%s: files %v, want %v", name, got, files)
		}
	}
	c, _ := LookupCorpus("pile")
	if got := c.Splits(); !slices.Equal(got, []string{"train", "val", "test"}) {
		t.Errorf("pile splits %v", got)
	}
	if c.Files[7].Sources[1].URL != "https://the-eye.eu/public/AI/pile/train/07.jsonl.zst" {
		t.Errorf("pile train 07 original URL %q", c.Files[7].Sources[1].URL)
	}
}

func TestLookupCorpusAliases(t *testing.T) {
	for name, want := range map[string]string{
		"pile_subset":     "pile-00",
		"pile_00":         "pile-00",
		"PILE-00":         "pile-00",
		"tinyshakespeare": "shakespeare",
		" enron ":         "enron",
		"enwik8":          "enwik8",
	} {
		if c, ok := LookupCorpus(name); !ok || c.Name != want {
			t.Errorf("LookupCorpus(%q) = %q, %v; want %q", name, c.Name, ok, want)
		}
	}
	for _, name := range []string{"", "pile-01", "openwebtext2", "list"} {
		if c, ok := LookupCorpus(name); ok {
			t.Errorf("LookupCorpus(%q) found %s", name, c.Name)
		}
	}
}

func TestCatalogReturnsCopies(t *testing.T) {
	c := Catalog()
	c[0].Files[0].Sources[0].URL = "changed"
	c[0].Aliases = append(c[0].Aliases, "changed")
	if again := Catalog(); again[0].Files[0].Sources[0].URL == "changed" || slices.Contains(again[0].Aliases, "changed") {
		t.Error("changing Catalog's result changed the catalog")
	}
}

func TestShakespeareIsPinnedToTheSharedCopy(t *testing.T) {
	data := testfiles.Read(t, "corpora/tinyshakespeare.txt")
	sum := sha256.Sum256(data)
	c, _ := LookupCorpus("shakespeare")
	f := c.Files[0]
	if f.Size != int64(len(data)) || f.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("catalog has %d bytes, sha256 %s; the shared copy %d, %x", f.Size, f.SHA256, len(data), sum)
	}
	if !c.HasVerifiedSource() || c.DefaultTokenizer != "char" {
		t.Errorf("shakespeare: verified %v, tokenizer %q", c.HasVerifiedSource(), c.DefaultTokenizer)
	}
	if total, known := c.TotalSize(); !known || total != f.Size {
		t.Errorf("TotalSize() = %d, %v", total, known)
	}
	for _, other := range []string{"pile", "enron"} {
		c, _ := LookupCorpus(other)
		if c.HasVerifiedSource() {
			t.Errorf("%s claims a verified source, but nothing could be verified", other)
		}
		if _, known := c.TotalSize(); known {
			t.Errorf("%s claims a known size", other)
		}
	}
}

func TestPlan(t *testing.T) {
	pile, _ := LookupCorpus("pile")
	dir := filepath.Join("data")
	a, b, c := strings.Repeat("a", 64), strings.Repeat("b", 64), strings.Repeat("c", 64)

	files := pile.Plan(dir, PlanOptions{})
	if len(files) != 32 {
		t.Fatalf("%d files", len(files))
	}
	if f := files[0]; f.Dest != filepath.Join("data", "downloads", "train", "00.jsonl.zst") || f.SHA256 != "" || f.Size != 0 ||
		!slices.Equal(f.URLs, []string{pileUncopyright + "train/00.jsonl.zst", pileOriginal + "train/00.jsonl.zst"}) {
		t.Errorf("no options: %+v", f)
	}

	opt := PlanOptions{
		Mirror:     "http://mirror.example/pile/",
		MirrorSums: map[string]string{"train/00.jsonl.zst": a, "val.jsonl.zst": b},
		Checksums:  map[string]string{"val.jsonl.zst": strings.ToUpper(c), "test.jsonl.zst": c},
	}
	files = pile.Plan(dir, opt)
	if f := files[0]; f.URLs[0] != "http://mirror.example/pile/train/00.jsonl.zst" || len(f.URLs) != 3 || f.SHA256 != a {
		t.Errorf("mirror, mirror sum: %+v", f)
	}
	if f := files[30]; f.Dest != filepath.Join("data", "downloads", "val.jsonl.zst") || f.SHA256 != c {
		t.Errorf("--checksums wins over the mirror's: %+v", f)
	}
	if f := files[31]; f.SHA256 != c {
		t.Errorf("--checksums alone: %+v", f)
	}
	if f := files[1]; f.SHA256 != "" {
		t.Errorf("no sum anywhere: %+v", f)
	}

	// The catalog's sha256 is the last resort, and its size goes with it.
	shake, _ := LookupCorpus("shakespeare")
	f := shake.Plan(dir, PlanOptions{})[0]
	if f.SHA256 != shakespeareSHA256 || f.Size != shakespeareSize || f.Dest != filepath.Join("data", "downloads", "input.txt") {
		t.Errorf("catalog sum: %+v", f)
	}
	f = shake.Plan(dir, PlanOptions{Mirror: "http://m", MirrorSums: map[string]string{"input.txt": a}})[0]
	if f.SHA256 != a || f.Size != 0 || !slices.Equal(f.URLs, []string{"http://m/input.txt", charRNN + "input.txt"}) {
		t.Errorf("mirror sum over the catalog's: %+v", f)
	}
	f = shake.Plan(dir, PlanOptions{Checksums: map[string]string{"input.txt": shakespeareSHA256}})[0]
	if f.Size != shakespeareSize {
		t.Errorf("the same sum keeps the size: %+v", f)
	}
	// A mirror that is one of the sources is not tried twice.
	f = shake.Plan(dir, PlanOptions{Mirror: charRNN})[0]
	if !slices.Equal(f.URLs, []string{charRNN + "input.txt"}) {
		t.Errorf("URLs %v", f.URLs)
	}
}

func TestFetchMirrorSums(t *testing.T) {
	a := strings.Repeat("a", 64)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/good/SHA256SUMS":
			fmt.Fprintf(w, "# sums\n%s  train/00.jsonl.zst\n%s *val.jsonl.zst\n", a, a)
		case "/bad/SHA256SUMS":
			fmt.Fprintf(w, "%s  ok\nnot a line\n", a)
		case "/s3/SHA256SUMS":
			http.Error(w, "AccessDenied", http.StatusForbidden)
		case "/down/SHA256SUMS":
			http.Error(w, "oops", http.StatusInternalServerError)
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	ctx := context.Background()
	sums, err := FetchMirrorSums(ctx, nil, srv.URL+"/good/")
	if err != nil || sums["train/00.jsonl.zst"] != a || sums["val.jsonl.zst"] != a || len(sums) != 2 {
		t.Errorf("good: %v, %v", sums, err)
	}
	for _, base := range []string{"/none", "/s3"} {
		if sums, err := FetchMirrorSums(ctx, nil, srv.URL+base); sums != nil || err != nil {
			t.Errorf("%s: %v, %v; want nil, nil", base, sums, err)
		}
	}
	_, err = FetchMirrorSums(ctx, nil, srv.URL+"/bad")
	if err == nil || !strings.Contains(err.Error(), "line 2") || !strings.Contains(err.Error(), "--checksums") {
		t.Errorf("bad: %v", err)
	}
	_, err = FetchMirrorSums(ctx, nil, srv.URL+"/down")
	if err == nil || !strings.Contains(err.Error(), "500") {
		t.Errorf("down: %v", err)
	}
}

func TestCheckDownload(t *testing.T) {
	tests := []struct {
		dest, head string
		ok         bool
	}{
		{"train/00.jsonl.zst", "\x28\xB5\x2F\xFD\x04\x00", true},
		{"train/00.jsonl.zst", "{\"text\": \"hi\"}\n", false},
		{"train/00.jsonl.zst", "<!DOCTYPE html><html>", false},
		{"enwik8.zip", "PK\x03\x04", true},
		{"enwik8.zip", "", false},
		{"x.json.gz", "\x1F\x8B\x08", true},
		{"x.parquet", "PAR1", true},
		{"input.txt", "First Citizen:\n", true},
		{"input.txt", "<html><body>rate limited</body></html>", false},
	}
	for _, tt := range tests {
		if err := CheckDownload(tt.dest, []byte(tt.head)); (err == nil) != tt.ok {
			t.Errorf("CheckDownload(%q, %q) = %v, want ok=%v", tt.dest, tt.head, err, tt.ok)
		}
	}
}

func TestFetchHint(t *testing.T) {
	f := fetch.File{Dest: "/data/downloads/input.txt"}
	if h := FetchHint(f, fetch.ErrNotFound); !strings.Contains(h, "--mirror") || !strings.Contains(h, "by hand to "+f.Dest) {
		t.Errorf("hint %q", h)
	}
	if h := FetchHint(f, &fetch.MismatchError{What: "sha256"}); !strings.Contains(h, "--checksums") {
		t.Errorf("hint %q", h)
	}
}

// A plan downloads end to end through internal/fetch from a --mirror, checked against
// its SHA256SUMS.
func TestPlanFetchesFromAMirror(t *testing.T) {
	shakespeare := testfiles.Read(t, "corpora/tinyshakespeare.txt")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/m/input.txt" {
			w.Write(shakespeare)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	c, _ := LookupCorpus("shakespeare")
	sums, err := FetchMirrorSums(context.Background(), nil, srv.URL+"/m")
	if err != nil || sums != nil {
		t.Fatalf("sums %v, %v", sums, err)
	}
	dir := t.TempDir()
	files := c.Plan(dir, PlanOptions{Mirror: srv.URL + "/m", MirrorSums: sums})
	if err := fetch.Fetch(context.Background(), files, fetch.Options{Validate: CheckDownload, Hint: FetchHint}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "downloads", "input.txt"))
	if err != nil || !bytes.Equal(got, shakespeare) {
		t.Fatalf("downloaded %d bytes, %v", len(got), err)
	}
}

// TestEnwik8IsPinned: enwik8 comes over https, checked against the size and sha256
// Hugging Face recorded for Matt Mahoney's file.
func TestEnwik8IsPinned(t *testing.T) {
	c, _ := LookupCorpus("enwik8")
	f := c.Files[0]
	if f.Size != 36445475 || f.SHA256 != "547994d9980ebed1288380d652999f38a14fe291a6247c157c3d33d4932534bc" || !c.HasVerifiedSource() {
		t.Errorf("enwik8: size %d, sha256 %s, verified %v", f.Size, f.SHA256, c.HasVerifiedSource())
	}
	for _, s := range f.Sources {
		if !strings.HasPrefix(s.URL, "https://") {
			t.Errorf("enwik8 source %s is not https", s.URL)
		}
	}
}

// TestShakespeareSplits: `prep list` shows the val split prep cuts from the one file.
func TestShakespeareSplits(t *testing.T) {
	c, _ := LookupCorpus("shakespeare")
	if got := c.Splits(); !slices.Equal(got, []string{"train", "val"}) || !c.Embedded() {
		t.Errorf("shakespeare: splits %v, embedded %v", got, c.Embedded())
	}
	text, err := c.Files[0].Embedded()
	if err != nil || int64(len(text)) != c.Files[0].Size {
		t.Errorf("embedded text: %d bytes, %v", len(text), err)
	}
}

func TestPrintCatalog(t *testing.T) {
	var b bytes.Buffer
	if err := PrintCatalog(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{
		"NAME", "pile-00", "pile_subset", "enron", "enwik8", "shakespeare", "tinyshakespeare",
		"train/00.jsonl.zst … train/29.jsonl.zst (30 files)", "val.jsonl.zst", "test.jsonl.zst",
		"enron_emails.jsonl.zst", "enwik8.zip", "input.txt", "1115394 bytes", shakespeareSHA256, "1.1 MB",
		pileUncopyright, pileOriginal, eaidata, mattmahoney, charRNN,
		"[unverified]", "[verified]", "not byte-identical", "--mirror", "--checksums",
		"uncopyrighted variant", "train,val", "36445475 bytes", enwik8SHA256, "Built into the binary",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("catalog lacks %q", want)
		}
	}
	for i, line := range strings.Split(out, "\n") {
		if len(line) > 140 {
			t.Errorf("line %d is %d bytes long: %q", i+1, len(line), line)
		}
	}
}
