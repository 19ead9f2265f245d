package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gptkit/internal/miniotest"
	"gptkit/loader"
	"gptkit/shards"
	"gptkit/storage"
)

func runTrain(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

// makeDataset writes 40 small documents as a two-shard dataset and returns its directory.
func makeDataset(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := storage.Open(ctx, dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := shards.NewManifest(shards.TokenizerInfo{Name: "test", Fingerprint: "test", VocabSize: 1000, EODID: -1}, shards.Uint16, nil)
	for s := range 2 {
		w, err := shards.NewWriter(ctx, st, fmt.Sprintf("data_%02d_text_document", s), shards.Uint16)
		if err != nil {
			t.Fatal(err)
		}
		for d := range 20 {
			doc := make([]int, 1+(d*7+s)%13)
			for k := range doc {
				doc[k] = (s*20+d)*10 + k%10
			}
			if err := w.AddDocument(doc); err != nil {
				t.Fatal(err)
			}
		}
		info, err := w.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := m.Add("", info); err != nil {
			t.Fatal(err)
		}
	}
	if err := shards.WriteManifest(ctx, st, "", m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// want is the expected sample sequence, built through the loader package.
func want(t *testing.T, dir string, seqLen int, n int64, seed uint32, order string) [][]int {
	t.Helper()
	ctx := context.Background()
	st, err := storage.Open(ctx, dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := shards.OpenDataset(ctx, st, "", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	r := loader.SplitRanges(int(d.Len()), [3]float64{969, 30, 1})[0]
	s, err := loader.NewSamples(d, [2]int64{int64(r[0]), int64(r[1])}, seqLen, n, seed, order)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]int
	for i := range s.Len() {
		out = append(out, s.Sample(i, nil))
	}
	return out
}

func parseLines(t *testing.T, out string) [][]int {
	t.Helper()
	var got [][]int
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" {
			continue
		}
		var ids []int
		if err := json.Unmarshal([]byte(line), &ids); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, ids)
	}
	return got
}

func equal(a, b [][]int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if fmt.Sprint(a[i]) != fmt.Sprint(b[i]) {
			return false
		}
	}
	return true
}

func TestSamples(t *testing.T) {
	dir := makeDataset(t)
	all := want(t, dir, 6, 30, 7, loader.OrderDefault)
	neox := want(t, dir, 6, 30, 7, loader.OrderNeoX)
	if len(all) <= 30 {
		t.Fatalf("%d samples: the test wants an index of more than --num-samples", len(all))
	}
	base := []string{"samples", "--data", dir, "--seq-len", "6", "--seed", "7", "--num-samples", "30"}
	// Without --count: the --num-samples a run reads (the index holds whole epochs: more).
	code, out, errOut := runTrain(t, base...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if got := parseLines(t, out); !equal(got, all[:30]) {
		t.Fatalf("the first 30 samples differ (%d printed):\n%v\nwant\n%v", len(got), got, all[:30])
	}
	code, out, errOut = runTrain(t, append(base, "--count", "-1")...)
	if code != 0 {
		t.Fatalf("--count -1: exit %d: %s", code, errOut)
	}
	if got := parseLines(t, out); !equal(got, all) {
		t.Fatalf("--count -1: all samples differ:\n%v\nwant\n%v", got, all)
	}
	code, out, errOut = runTrain(t, append(base, "--first", "25")...)
	if code != 0 || !equal(parseLines(t, out), all[25:30]) {
		t.Fatalf("--first 25: exit %d %s\n%s", code, errOut, out)
	}
	code, out, errOut = runTrain(t, append(base, "--first", "31")...)
	if code != 1 || out != "" || !strings.Contains(errOut, "--count C") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("--first 31 of --num-samples 30: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runTrain(t, append(base, "--first", "31", "--count", "2")...)
	if code != 0 || !equal(parseLines(t, out), all[31:33]) {
		t.Fatalf("--first 31 --count 2: exit %d %s\n%s", code, errOut, out)
	}
	for _, ids := range parseLines(t, out) {
		if len(ids) != 7 {
			t.Fatalf("sample of %d ids", len(ids))
		}
	}
	code, out, errOut = runTrain(t, append(base, "--first", "5", "--count", "4", "--order", "neox")...)
	if code != 0 || !equal(parseLines(t, out), neox[5:9]) {
		t.Fatalf("--order neox --first 5 --count 4: exit %d %s\n%s", code, errOut, out)
	}
	code, out, errOut = runTrain(t, append(base, "--first", "5", "--count", "4")...)
	if code != 0 || !equal(parseLines(t, out), all[5:9]) {
		t.Fatalf("--first 5 --count 4: exit %d %s\n%s", code, errOut, out)
	}
	// Ranks: each prints its slices of every global micro-batch of M*W samples.
	const W, M = 3, 2
	for r := range W {
		code, out, errOut = runTrain(t, append(base, "--rank", fmt.Sprint(r), "--world", fmt.Sprint(W), "--micro-batch", fmt.Sprint(M), "--grad-accum", "2")...)
		if code != 0 {
			t.Fatalf("rank %d: exit %d: %s", r, code, errOut)
		}
		var exp, expAll [][]int
		for g := 0; (g+1)*M*W <= len(all); g++ {
			if (g+1)*M*W <= 30 {
				exp = append(exp, all[g*M*W+r*M:g*M*W+(r+1)*M]...)
			}
			expAll = append(expAll, all[g*M*W+r*M:g*M*W+(r+1)*M]...)
		}
		if !equal(parseLines(t, out), exp) {
			t.Fatalf("rank %d differs", r)
		}
		code, out, errOut = runTrain(t, append(base, "--rank", fmt.Sprint(r), "--world", fmt.Sprint(W), "--micro-batch", fmt.Sprint(M), "--count", "-1")...)
		if code != 0 || !equal(parseLines(t, out), expAll) {
			t.Fatalf("rank %d --count -1: exit %d: %s", r, code, errOut)
		}
		code, out, _ = runTrain(t, append(base, "--rank", fmt.Sprint(r), "--world", fmt.Sprint(W), "--micro-batch", fmt.Sprint(M), "--first", "12", "--count", "3")...)
		if code != 0 || !equal(parseLines(t, out), append(append([][]int{}, all[12+r*M:12+(r+1)*M]...), all[18+r*M])) {
			t.Fatalf("rank %d --first 12 --count 3: exit %d\n%s", r, code, out)
		}
	}
	// Past the end: a failure naming the count.
	code, _, errOut = runTrain(t, append(base, "--first", "0", "--count", "100000")...)
	if code != 1 || !strings.Contains(errOut, "--num-samples") || strings.Count(errOut, "\n") != 1 {
		t.Fatalf("past the end: exit %d, stderr %q", code, errOut)
	}
}

func TestUsage(t *testing.T) {
	dir := makeDataset(t)
	if code, _, errOut := runTrain(t); code != 2 || !strings.Contains(errOut, "samples") {
		t.Fatalf("no args: exit %d, %q", code, errOut)
	}
	if code, _, errOut := runTrain(t, "bogus"); code != 2 || !strings.Contains(errOut, "samples") {
		t.Fatalf("unknown command: exit %d, %q", code, errOut)
	}
	if code, _, _ := runTrain(t, "-h"); code != 0 {
		t.Fatalf("-h: exit %d", code)
	}
	if code, _, errOut := runTrain(t, "samples", "-h"); code != 0 || !strings.Contains(errOut, "--num-samples") || strings.Contains(errOut, "(default )") {
		t.Fatalf("samples -h: exit %d, %q", code, errOut)
	}
	base := []string{"samples", "--data", dir, "--seq-len", "6", "--num-samples", "30"}
	for _, args := range [][]string{
		{"samples", "--seq-len", "6", "--num-samples", "30"},
		{"samples", "--data", dir, "--num-samples", "30"},
		{"samples", "--data", dir, "--seq-len", "6"},
		append(base, "--order", "random"),
		append(base, "--split", "a,b"),
		append(base, "--rank", "0"),
		append(base, "--rank", "3", "--world", "3"),
		append(base, "--rank", "0", "--world", "2", "--micro-batch", "2", "--first", "3"),
		append(base, "--bogus"),
		append(base, "extra"),
	} {
		if code, _, errOut := runTrain(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, errOut)
		}
	}
	if code, _, errOut := runTrain(t, "samples", "--data", dir+"/missing", "--seq-len", "6", "--num-samples", "3"); code != 1 || !strings.Contains(errOut, "no such dataset") {
		t.Fatalf("missing dir: exit %d, %q", code, errOut)
	}
}

// TestSamplesDataForms checks that every --data form prints what loader.Open gives.
func TestSamplesDataForms(t *testing.T) {
	a, b := makeDataset(t), makeDataset(t)
	yamlPath := filepath.Join(t.TempDir(), "blend.yaml")
	if err := os.WriteFile(yamlPath, []byte("datasets:\n  - {path: "+a+", weight: 0.7}\n  - {path: "+b+", weight: 0.3}\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	for _, data := range []string{
		a,
		filepath.Join(a, "data_01_text_document"),
		"0.7:" + a + ",0.3:" + b,
		yamlPath,
	} {
		for _, order := range []string{loader.OrderDefault, loader.OrderNeoX} {
			open := func(n int64) *loader.Data {
				d, err := loader.Open(context.Background(), loader.Options{Data: data, SeqLen: 5, Seed: 3, Order: order, Split: "969,30,1",
					NumSamples: [3]int64{n, 0, 0}, CacheDir: t.TempDir()})
				if err != nil {
					t.Fatal(err)
				}
				return d
			}
			d := open(25)
			if order == loader.OrderNeoX && d.Train.Len() < 25 { // the index a run builds (TestSamplesNeoXShortIndex)
				more := int64(1)
				if b, ok := d.Train.(*loader.Blend); ok {
					more = int64(len(b.Sources))
				}
				d.Close()
				d = open(25 + more)
			}
			var exp [][]int
			for i := range min(d.Train.Len(), 25) { // without --count: the --num-samples a run reads
				exp = append(exp, d.Train.Sample(i, nil))
			}
			d.Close()
			code, out, errOut := runTrain(t, "samples", "--data", data, "--seq-len", "5", "--seed", "3", "--num-samples", "25", "--order", order, "--cache-dir", t.TempDir())
			if code != 0 || !equal(parseLines(t, out), exp) {
				t.Fatalf("--data %s --order %s: exit %d %s", data, order, code, errOut)
			}
		}
	}
}

// TestSamplesNeoXGolden runs `train samples --order neox` on datasets whose document
// sizes are those of loader/testdata/neox_index_golden.json (GPT-NeoX's arrays from
// real numpy) and checks every printed sample against those arrays: each token
// encodes its document and offset, so the output shows where each sample lies.
func TestSamplesNeoXGolden(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "loader", "testdata", "neox_index_golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Cases []struct {
			Name          string  `json:"name"`
			Seed          uint32  `json:"seed"`
			SeqLen        int     `json:"seq_len"`
			NumSamples    int64   `json:"num_samples"`
			Sizes         []int32 `json:"sizes"`
			Len           int64   `json:"len"`
			DocIdxSHA     string  `json:"doc_idx_sha256"`
			SampleIdxSHA  string  `json:"sample_idx_sha256"`
			ShuffleIdxSHA string  `json:"shuffle_idx_sha256"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	ran := 0
	for _, g := range f.Cases {
		if len(g.Sizes) > 300 || g.Len > 2000 {
			continue // the loader's own golden test covers the big ones
		}
		ran++
		t.Run(g.Name, func(t *testing.T) {
			x, err := loader.BuildNeoXIndex(g.Sizes, g.SeqLen, g.NumSamples, g.Seed)
			if err != nil {
				t.Fatal(err)
			}
			if leSHA(x.DocIdx) != g.DocIdxSHA || leSHA(x.SampleIdx) != g.SampleIdxSHA || leSHA(x.ShuffleIdx) != g.ShuffleIdxSHA {
				t.Fatal("BuildNeoXIndex differs from the golden arrays")
			}
			docs := make([][]int, len(g.Sizes))
			for d, n := range g.Sizes {
				for o := range int(n) {
					docs[d] = append(docs[d], d<<16|o)
				}
			}
			dir := writeDocs(t, docs, shards.Int32)
			code, out, errOut := runTrain(t, "samples", "--data", dir, "--split", "1,0,0", "--order", "neox", "--count", "-1",
				"--seq-len", fmt.Sprint(g.SeqLen), "--seed", fmt.Sprint(g.Seed), "--num-samples", fmt.Sprint(g.NumSamples))
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			got := parseLines(t, out)
			if int64(len(got)) != g.Len {
				t.Fatalf("%d samples, GPT-NeoX's length is %d", len(got), g.Len)
			}
			var spans []loader.Span
			for i, ids := range got {
				spans = x.AppendSpans(spans[:0], int64(i), g.Sizes)
				k := 0
				for _, sp := range spans {
					for o := sp.Off; o < sp.Off+sp.Len; o++ {
						if ids[k] != int(sp.Doc)<<16|int(o) {
							t.Fatalf("sample %d token %d is doc %d offset %d, GPT-NeoX has doc %d offset %d", i, k, ids[k]>>16, ids[k]&0xffff, sp.Doc, o)
						}
						k++
					}
				}
			}
		})
	}
	if ran < 5 {
		t.Fatalf("only %d golden cases ran", ran)
	}
}

func leSHA[T any](a []T) string {
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, a); err != nil {
		panic(err)
	}
	s := sha256.Sum256(buf.Bytes())
	return hex.EncodeToString(s[:])
}

// writeDocs writes docs as a one-shard dataset and returns its directory.
func writeDocs(t *testing.T, docs [][]int, dtype shards.DType) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	st, err := storage.Open(ctx, dir, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := shards.NewManifest(shards.TokenizerInfo{Name: "test", Fingerprint: "test", VocabSize: 1 << 30, EODID: -1}, dtype, nil)
	w, err := shards.NewWriter(ctx, st, "data_text_document", dtype)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if err := w.AddDocument(d); err != nil {
			t.Fatal(err)
		}
	}
	info, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add("", info); err != nil {
		t.Fatal(err)
	}
	if err := shards.WriteManifest(ctx, st, "", m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestSamplesS3 prints the samples of a dataset in a real MinIO: the same as those
// of its local copy.
func TestSamplesS3(t *testing.T) {
	srv := miniotest.Start(t)
	srv.Setenv(t)
	dir := makeDataset(t)
	ctx := context.Background()
	loc := "s3://" + srv.NewBucket(t) + "/ds"
	st, err := storage.Open(ctx, loc, storage.Options{})
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		w, err := st.Create(ctx, e.Name())
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"samples", "--seq-len", "6", "--seed", "7", "--num-samples", "30", "--order", "neox"}
	code, want, errOut := runTrain(t, append(args, "--data", dir)...)
	if code != 0 {
		t.Fatalf("local: exit %d: %s", code, errOut)
	}
	code, got, errOut := runTrain(t, append(args, "--data", loc, "--s3-endpoint", srv.Endpoint, "--cache-dir", t.TempDir())...)
	if code != 0 || got != want {
		t.Fatalf("s3: exit %d: %s", code, errOut)
	}
}

// TestSamplesNeoXShortIndex: with GPT-NeoX's order an index built for exactly N can
// serve N-1 samples, and a run of N builds it for N+1 (train's openData); without
// --count, samples prints what that run reads (it printed N-1 samples of the index
// for N, which the run never reads, without a word).
func TestSamplesNeoXShortIndex(t *testing.T) {
	dir := makeDataset(t)
	var n int64
	for n = 2; n < 400; n++ { // an N whose index serves N-1
		if int64(len(want(t, dir, 6, n, 7, loader.OrderNeoX))) < n {
			break
		}
	}
	if n == 400 {
		t.Fatal("no --num-samples with a short GPT-NeoX index: the test's dataset changed")
	}
	code, out, errOut := runTrain(t, "samples", "--data", dir, "--seq-len", "6", "--seed", "7", "--num-samples", fmt.Sprint(n), "--order", "neox")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	run := want(t, dir, 6, n+1, 7, loader.OrderNeoX)
	if got := parseLines(t, out); !equal(got, run[:n]) {
		t.Fatalf("--num-samples %d: %d samples printed, want the %d of the index a run builds (for %d)", n, len(got), n, n+1)
	}
	if !strings.Contains(errOut, "index_for="+fmt.Sprint(n+1)) {
		t.Fatalf("no warning that the index is built for more: %s", errOut)
	}
}

// TestUsagePlaceholders: every flag of train and its commands shows a named value in
// -h (--order ORDER), not the Go type flag prints for a usage without a `NAME`
// (`train samples -h` showed "--order string").
func TestUsagePlaceholders(t *testing.T) {
	goType := regexp.MustCompile(`(?m)^  --\S+ (string|int|int64|uint|uint64|float|value|duration)$`)
	for _, cmd := range [][]string{{"-h"}, {"sample", "-h"}, {"score", "-h"}, {"export", "-h"}, {"plot", "-h"}, {"samples", "-h"}} {
		_, _, errOut := runTrain(t, cmd...)
		if m := goType.FindAllString(errOut, -1); len(m) > 0 {
			t.Errorf("train %s: flags without a named value: %q", strings.Join(cmd, " "), m)
		}
	}
}
