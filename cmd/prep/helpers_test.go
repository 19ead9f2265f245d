package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"math/big"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"gptkit/internal/testfiles"
	"gptkit/pipelines"
	"gptkit/prep"
	"gptkit/shards"
	"gptkit/storage"
	"gptkit/tokenize"
	"gptkit/tokenize/spec"
)

// The tests run `prep` in-process through run(), against an httptest server on 127.0.0.1
// that plays the --mirror. Nothing leaves the machine: TestMain points HTTP_PROXY and
// HTTPS_PROXY at a fake internet that answers 404 for every catalog host (over TLS, with
// a certificate it makes and puts in SSL_CERT_FILE), so that a run which falls back from
// the mirror to the catalog's sources fails at once instead of retrying unreachable hosts
// for a minute, and so that a test can say whether anything beyond the mirror was asked.
//
// With GPTKIT_PREP_CHILD set, the test binary is instead a `prep` process that kills
// itself at a chosen moment (resume_test.go); with GPTKIT_PREP_MAIN=1, it is `prep`
// itself, as the SLURM jobs that `prep --slurm` writes run it (slurm_test.go).
func TestMain(m *testing.M) {
	if c := os.Getenv(childEnv); c != "" {
		os.Exit(childMain(c))
	}
	if os.Getenv(prepMainEnv) == "1" {
		os.Exit(prepMain())
	}
	stop, err := startFakeInternet()
	if err != nil {
		fmt.Fprintln(os.Stderr, "prep tests:", err)
		os.Exit(1)
	}
	code := m.Run()
	stop()
	os.Exit(code)
}

// --- the fake internet -------------------------------------------------------------

// internet records the requests that reached the fake internet: URLs of hosts other
// than the tests' own servers.
var internet struct {
	mu   sync.Mutex
	hits []string
}

// internetHits returns how many requests reached the fake internet so far.
func internetHits() int {
	internet.mu.Lock()
	defer internet.mu.Unlock()
	return len(internet.hits)
}

// internetHitsSince returns the URLs requested of the fake internet after the first n.
func internetHitsSince(n int) []string {
	internet.mu.Lock()
	defer internet.mu.Unlock()
	return slices.Clone(internet.hits[n:])
}

func recordHit(u string) {
	internet.mu.Lock()
	internet.hits = append(internet.hits, u)
	internet.mu.Unlock()
}

// startFakeInternet starts the proxy every request to a non-loopback host goes through:
// plain http requests get a 404, CONNECT tunnels a TLS connection (certificate for the
// catalog's hosts, trusted through SSL_CERT_FILE) whose request gets a 404.
func startFakeInternet() (stop func(), err error) {
	dir, err := os.MkdirTemp("", "prep-test-internet-")
	if err != nil {
		return nil, err
	}
	cert, certPEM, err := selfSignedCert(catalogHosts())
	if err != nil {
		return nil, err
	}
	caFile := filepath.Join(dir, "ca.pem")
	if err := os.WriteFile(caFile, certPEM, 0o644); err != nil {
		return nil, err
	}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodConnect {
			tunnelTo404(w, r, cert)
			return
		}
		recordHit(r.URL.String())
		http.NotFound(w, r)
	}))
	// http.ProxyFromEnvironment reads these once, on first use: nothing has used it yet.
	for _, k := range []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"} {
		os.Setenv(k, proxy.URL)
	}
	os.Unsetenv("NO_PROXY")
	os.Unsetenv("no_proxy")
	os.Setenv("SSL_CERT_FILE", caFile)
	return func() {
		proxy.Close()
		os.RemoveAll(dir)
	}, nil
}

// tunnelTo404 answers a CONNECT: a TLS server on the hijacked connection that answers
// its one request with 404.
func tunnelTo404(w http.ResponseWriter, r *http.Request, cert tls.Certificate) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	tc := tls.Server(conn, &tls.Config{Certificates: []tls.Certificate{cert}, NextProtos: []string{"http/1.1"}})
	defer tc.Close()
	req, err := http.ReadRequest(bufio.NewReader(tc))
	if err != nil {
		return
	}
	recordHit("https://" + r.Host + req.URL.RequestURI())
	io.WriteString(tc, "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 10\r\nConnection: close\r\n\r\nnot found\n")
}

// catalogHosts are the hosts of every source in the catalog.
func catalogHosts() []string {
	var hosts []string
	for _, c := range prep.Catalog() {
		for _, f := range c.Files {
			for _, s := range f.Sources {
				if u, err := url.Parse(s.URL); err == nil && !slices.Contains(hosts, u.Hostname()) {
					hosts = append(hosts, u.Hostname())
				}
			}
		}
	}
	return hosts
}

// selfSignedCert makes a certificate for hosts that is its own root.
func selfSignedCert(hosts []string) (tls.Certificate, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "prep test internet"},
		DNSNames:              hosts,
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// --- the mirror --------------------------------------------------------------------

// mirror is a --mirror BASE: it serves files by their catalog names (with Range support,
// through http.ServeContent) and records every request.
type mirror struct {
	*httptest.Server

	mu        sync.Mutex
	files     map[string][]byte
	reqs      []mirrorRequest
	heads     []string        // HEAD requests (the download plan), by name
	dropFirst map[string]bool // send half the bytes, then cut the connection, on the first GET
	dropped   map[string]bool
	slow      map[string]bool // send requests without Range 16 KiB every 20 ms
}

type mirrorRequest struct {
	Path, Range string
}

func newMirror(t *testing.T) *mirror {
	m := &mirror{files: map[string][]byte{}, dropFirst: map[string]bool{}, dropped: map[string]bool{}, slow: map[string]bool{}}
	m.Server = httptest.NewServer(m)
	t.Cleanup(m.Close)
	return m
}

// base is the --mirror argument.
func (m *mirror) base() string { return m.URL + "/" }

// put serves data as name.
func (m *mirror) put(name string, data []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.files[name] = data
}

// putSums serves SHA256SUMS listing sums (name → hex).
func (m *mirror) putSums(sums map[string]string) {
	var b strings.Builder
	for _, name := range slices.Sorted(maps.Keys(sums)) {
		fmt.Fprintf(&b, "%s  %s\n", sums[name], name)
	}
	m.put("SHA256SUMS", []byte(b.String()))
}

// requests returns the requests so far.
func (m *mirror) requests() []mirrorRequest {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.reqs)
}

// requestsFor returns the requests so far for name.
func (m *mirror) requestsFor(name string) []mirrorRequest {
	var out []mirrorRequest
	for _, r := range m.requests() {
		if r.Path == name {
			out = append(out, r)
		}
	}
	return out
}

func (m *mirror) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name := strings.TrimPrefix(r.URL.Path, "/")
	m.mu.Lock()
	if r.Method == http.MethodHead { // the download plan asking for a size: not a download
		data, ok := m.files[name]
		m.heads = append(m.heads, name)
		m.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		return
	}
	m.reqs = append(m.reqs, mirrorRequest{Path: name, Range: r.Header.Get("Range")})
	data, ok := m.files[name]
	drop := m.dropFirst[name] && !m.dropped[name]
	if drop {
		m.dropped[name] = true
	}
	slow := m.slow[name] && r.Header.Get("Range") == ""
	m.mu.Unlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	sum := sha256.Sum256(data)
	w.Header().Set("ETag", `"`+hex.EncodeToString(sum[:8])+`"`)
	switch {
	case drop:
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		w.Write(data[:len(data)/2])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection is cut
	case slow:
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.WriteHeader(http.StatusOK)
		for off := 0; off < len(data); off += 16 << 10 {
			if _, err := w.Write(data[off:min(off+16<<10, len(data))]); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	default:
		http.ServeContent(w, r, name, time.Time{}, bytes.NewReader(data))
	}
}

// --- corpora -----------------------------------------------------------------------

// pileSets are the meta.pile_set_name values of the generated records.
var pileSets = []string{"Pile-CC", "Enron Emails", "Github", "ArXiv", "Wikipedia (en)"}

// unicodeTexts are texts beyond ASCII (and JSON escapes) for the generated records.
var unicodeTexts = []string{
	"Grüße aus Köln — «ça va?»",
	"日本語のテキストです。漢字とかなカナ。",
	"emoji 🎉🚀👩‍👩‍👧 and flags 🇩🇪🇯🇵",
	"Ελληνικά: Καλημέρα κόσμε",
	"עברית ועוד العربية",
	"e\u0301 combining, \u00e9 precomposed",
	"line\u2028separator and paragraph\u2029separator",
	"tab\there, <html> & \"quotes\" \\ backslash",
	"  leading and trailing spaces  \n\n\n",
	"\r\nwindows\r\nline endings\r\n",
}

// pileRecord is one generated JSONL record and the document text it stands for.
type pileRecord struct {
	Line string // the JSON line (no newline)
	Text string // the document's text ("" for an empty one, which is dropped)
	Set  string // its meta.pile_set_name ("" when it has no meta)
}

// genPile generates n Pile-like records, reproducibly from seed: Shakespeare passages,
// unicode texts, texts given as lists of strings (joined with "\n\n"), empty texts, and
// now and then a record without meta.
func genPile(t testing.TB, n int, seed uint64) []pileRecord {
	t.Helper()
	lines := strings.Split(string(testfiles.Read(t, "corpora/tinyshakespeare.txt")), "\n")
	rng := mrand.New(mrand.NewPCG(seed, 42))
	passage := func() string {
		i := rng.IntN(len(lines) - 10)
		return strings.Join(lines[i:i+1+rng.IntN(8)], "\n")
	}
	recs := make([]pileRecord, n)
	for i := range recs {
		var text any
		var want string
		switch k := rng.IntN(20); {
		case k < 12:
			want = passage()
			text = want
		case k < 15:
			want = unicodeTexts[rng.IntN(len(unicodeTexts))]
			text = want
		case k < 18:
			parts := []string{passage(), unicodeTexts[rng.IntN(len(unicodeTexts))]}
			if k == 17 {
				parts = []string{"a", "b"}
			}
			want = strings.Join(parts, prep.ListSeparator)
			text = parts
		default:
			text = ""
		}
		rec := map[string]any{"text": text}
		set := ""
		if rng.IntN(50) != 0 {
			set = pileSets[rng.IntN(len(pileSets))]
			rec["meta"] = map[string]any{"pile_set_name": set}
		}
		b, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		recs[i] = pileRecord{Line: string(b), Text: want, Set: set}
	}
	return recs
}

// jsonl joins the records' lines into a JSONL file.
func jsonl(recs []pileRecord) []byte {
	var b bytes.Buffer
	for _, r := range recs {
		b.WriteString(r.Line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// texts returns the non-empty texts of recs (of set only, if set is not "").
func texts(recs []pileRecord, set string) []string {
	var out []string
	for _, r := range recs {
		if r.Text != "" && (set == "" || r.Set == set) {
			out = append(out, r.Text)
		}
	}
	return out
}

// zst compresses data as one zstd frame.
func zst(t testing.TB, data []byte) []byte {
	t.Helper()
	enc, err := zstd.NewWriter(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	return enc.EncodeAll(data, nil)
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// writeFile writes data to dir/name and returns the path.
func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// --- running prep ------------------------------------------------------------------

// runPrep runs the prep command line in-process.
func runPrep(t testing.TB, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// mustPrep runs the prep command line and fails the test unless it exits 0.
func mustPrep(t testing.TB, args ...string) (stdout, stderr string) {
	t.Helper()
	code, stdout, stderr := runPrep(t, args...)
	if code != 0 {
		t.Fatalf("prep %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, stdout, stderr)
	}
	return stdout, stderr
}

// gpt2Dir is the shared GPT-2 tokenizer, a directory SPEC (vocab.json and merges.txt).
func gpt2Dir(t testing.TB) string {
	t.Helper()
	return testfiles.Path(t, "tokenizers/gpt2")
}

var gpt2Cache struct {
	sync.Mutex
	tok *tokenize.Tokenizer
}

// gpt2 loads the shared GPT-2 tokenizer as --tokenizer loads it.
func gpt2(t testing.TB) *tokenize.Tokenizer {
	t.Helper()
	dir := gpt2Dir(t)
	gpt2Cache.Lock()
	defer gpt2Cache.Unlock()
	if gpt2Cache.tok == nil {
		tok, err := spec.Load(context.Background(), dir, spec.Options{})
		if err != nil {
			t.Fatal(err)
		}
		gpt2Cache.tok = tok
	}
	return gpt2Cache.tok
}

// encodeAll is what a dataset of texts holds: each text's ids, then eod if eod >= 0.
func encodeAll(tok *tokenize.Tokenizer, texts []string, eod int) [][]int {
	out := make([][]int, len(texts))
	for i, s := range texts {
		out[i] = tok.Encode(s)
		if eod >= 0 {
			out[i] = append(out[i], eod)
		}
	}
	return out
}

// dirStore opens a local dataset directory.
func dirStore(t testing.TB, dir string) storage.Store {
	t.Helper()
	st, err := storage.Open(context.Background(), dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// openDataset opens the dataset in dir (closed at the end of the test).
func openDataset(t testing.TB, dir string) *shards.Dataset {
	t.Helper()
	d, err := shards.OpenDataset(context.Background(), dirStore(t, dir), "", "")
	if err != nil {
		t.Fatalf("open the dataset in %s: %v", dir, err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// datasetDocs returns every document's ids of the dataset in dir, in order.
func datasetDocs(t testing.TB, dir string) [][]int {
	t.Helper()
	d := openDataset(t, dir)
	out := make([][]int, d.Len())
	for i := range out {
		out[i] = d.Tokens(int64(i))
	}
	return out
}

// compareDocs reports where got and want, lists of documents' ids, first differ.
func compareDocs(t testing.TB, what string, got, want [][]int) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d documents, want %d", what, len(got), len(want))
	}
	for i := range min(len(got), len(want)) {
		if !slices.Equal(got[i], want[i]) {
			j := 0
			for j < min(len(got[i]), len(want[i])) && got[i][j] == want[i][j] {
				j++
			}
			t.Errorf("%s: document %d differs first at token %d: %d tokens %v..., want %d tokens %v...", what, i, j,
				len(got[i]), got[i][j:min(j+8, len(got[i]))], len(want[i]), want[i][j:min(j+8, len(want[i]))])
			return
		}
	}
}

// referenceRun is `tokenize run` (AppendEOD) of inputs into a new directory.
func referenceRun(t testing.TB, tok *tokenize.Tokenizer, inputs ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "reference")
	r := &pipelines.TokenizeRun{Inputs: inputs, Store: dirStore(t, dir), Name: "reference", Tokenizer: tok, AppendEOD: true, Workers: 2}
	if _, _, err := r.Run(context.Background()); err != nil {
		t.Fatalf("reference tokenize run: %v", err)
	}
	return dir
}

// readManifest reads dir's manifest.json.
func readManifest(t testing.TB, dir string) *shards.Manifest {
	t.Helper()
	m, err := shards.ReadManifest(context.Background(), dirStore(t, dir), "")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// noManifest fails the test if dir holds a manifest.json.
func noManifest(t testing.TB, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, shards.ManifestName)); err == nil {
		t.Errorf("%s holds a manifest.json", dir)
	}
}

// hasAll fails the test for each of wants that s does not contain.
func hasAll(t testing.TB, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s does not contain %q:\n%s", what, w, s)
		}
	}
}
