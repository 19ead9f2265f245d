package tokenize

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"gptkit/internal/sharedtest"
	"gptkit/internal/testfiles"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

const trainEOT = "<|endoftext|>"

// trainCorpus is tinyshakespeare, read in place from the shared directory.
func trainCorpus(tb testing.TB) string {
	tb.Helper()
	return string(testfiles.Read(tb, "corpora/tinyshakespeare.txt"))
}

func mustTrain(tb testing.TB, texts []string, opt TrainOptions) *Trained {
	tb.Helper()
	m, err := Train(context.Background(), TrainTexts(texts), opt)
	if err != nil {
		tb.Fatal(err)
	}
	return m
}

func trainJSON(tb testing.TB, m *Trained) []byte {
	tb.Helper()
	var buf bytes.Buffer
	if err := m.WriteHFJSON(&buf); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

// shakespeare1000 is the tokenizer the tests below share: vocab 1000 with <|endoftext|>.
var shakespeare1000 struct {
	once sync.Once
	m    *Trained
	json []byte
	err  error
}

func trainedShakespeare(tb testing.TB) (*Trained, []byte) {
	tb.Helper()
	text := trainCorpus(tb)
	s := &shakespeare1000
	s.once.Do(func() {
		s.m, s.err = Train(context.Background(), TrainTexts([]string{text}), TrainOptions{VocabSize: 1000, Special: []string{trainEOT}})
		if s.err == nil {
			var buf bytes.Buffer
			s.err = s.m.WriteHFJSON(&buf)
			s.json = buf.Bytes()
		}
	})
	if s.err != nil {
		tb.Fatal(s.err)
	}
	return s.m, s.json
}

func TestTrainHandChecked(t *testing.T) {
	// "aaabdaaabac" is one piece (all letters). Counts per copy: aa 4, ab 2, the rest 1.
	// After "a a": (aa,a) and (a,b) tie at 2 and (a,b) has the smaller left id. Then every
	// pair occurs once per copy and the smallest (left, right) ids win.
	texts := make([]string, 10)
	for i := range texts {
		texts[i] = "aaabdaaabac"
	}
	want := [][2]string{{"a", "a"}, {"a", "b"}, {"aa", "ab"}, {"a", "c"}, {"d", "aaab"}, {"aaab", "daaab"}, {"aaabdaaab", "ac"}}
	m := mustTrain(t, texts, TrainOptions{VocabSize: 1000})
	if got := m.Merges(); !reflect.DeepEqual(got, want) {
		t.Fatalf("merges = %q, want %q", got, want)
	}
	if m.VocabSize() != 256+len(want) {
		t.Errorf("vocab size %d, want %d (the corpus runs out of pairs)", m.VocabSize(), 256+len(want))
	}
	if got := m.Token(256 + 6); got != "aaabdaaabac" {
		t.Errorf("last token %q", got)
	}

	m = mustTrain(t, texts, TrainOptions{VocabSize: 256 + 1 + 3, Special: []string{trainEOT}})
	if got := m.Merges(); !reflect.DeepEqual(got, want[:3]) {
		t.Fatalf("merges = %q, want %q", got, want[:3])
	}
	if m.VocabSize() != 260 || m.Token(0) != trainEOT || m.Token(1) != "!" || m.Token(259) != "aaab" {
		t.Errorf("vocab size %d, tokens 0, 1, 259 = %q %q %q", m.VocabSize(), m.Token(0), m.Token(1), m.Token(259))
	}

	// Pairs below the minimum frequency are not merged.
	m = mustTrain(t, []string{"aaabdaaabac"}, TrainOptions{VocabSize: 1000})
	if got := m.Merges(); !reflect.DeepEqual(got, want[:3]) {
		t.Errorf("min frequency 2 (default): merges = %q, want %q", got, want[:3])
	}
	m = mustTrain(t, []string{"aaabdaaabac"}, TrainOptions{VocabSize: 1000, MinFrequency: 1})
	if got := m.Merges(); !reflect.DeepEqual(got, want) {
		t.Errorf("min frequency 1: merges = %q, want %q", got, want)
	}
}

func TestTrainOverlappingRuns(t *testing.T) {
	// Runs of one character overlap with themselves; the counts must stay exact.
	texts := []string{"aaaa aaa aaaaaaa", "aaaaa", "a aa aaaa", "      x", "\n\n\n\n\n"}
	m := mustTrain(t, texts, TrainOptions{VocabSize: 300, MinFrequency: 1})
	if got, want := m.Merges(), refTrain(texts, 300, 1); !reflect.DeepEqual(got, want) {
		t.Fatalf("merges\n%q\nreference\n%q", got, want)
	}
	tok, err := m.Tokenizer("runs")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range texts {
		if got := tok.Decode(tok.Encode(s)); got != s {
			t.Errorf("round trip %q -> %q", s, got)
		}
	}
}

func TestTrainMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	alphabets := []string{"ab", "ab ", "abc \n", "aé  '.", "xy1 "}
	for trial := 0; trial < 300; trial++ {
		alpha := []rune(alphabets[trial%len(alphabets)])
		texts := make([]string, 1+rng.IntN(8))
		for i := range texts {
			r := make([]rune, rng.IntN(40))
			for k := range r {
				r[k] = alpha[rng.IntN(len(alpha))]
			}
			texts[i] = string(r)
		}
		minFreq := 1 + rng.IntN(2)
		m := mustTrain(t, texts, TrainOptions{VocabSize: 400, MinFrequency: minFreq, Workers: 1 + rng.IntN(3)})
		if got, want := m.Merges(), refTrain(texts, 400, minFreq); !reflect.DeepEqual(got, want) {
			t.Fatalf("texts %q min frequency %d:\nmerges    %q\nreference %q", texts, minFreq, got, want)
		}
	}
}

// refTrain is the slow, obvious trainer: recount every pair before every merge. Tokens
// are raw byte strings; ids are the byte tokens in byte-level character order, then the
// merges' results in order; ties go to the smallest (left id, right id).
func refTrain(texts []string, vocabSize, minFreq int) [][2]string {
	id := map[string]int{}
	var order []int
	for b := 0; b < 256; b++ {
		order = append(order, b)
	}
	sort.Slice(order, func(i, j int) bool { return byteToChar(byte(order[i])) < byteToChar(byte(order[j])) })
	for _, b := range order {
		id[string([]byte{byte(b)})] = len(id)
	}
	counts := map[string]int{}
	for _, text := range texts {
		for _, p := range trainPieces(text) {
			counts[p]++
		}
	}
	var words [][]string
	var weight []int
	for w, c := range counts {
		var sym []string
		for i := 0; i < len(w); i++ {
			sym = append(sym, w[i:i+1])
		}
		words = append(words, sym)
		weight = append(weight, c)
	}
	merges := [][2]string{}
	for len(id) < vocabSize {
		pairs := map[[2]string]int{}
		for wi, w := range words {
			for i := 0; i+1 < len(w); i++ {
				pairs[[2]string{w[i], w[i+1]}] += weight[wi]
			}
		}
		var best [2]string
		bestCount := 0
		for p, c := range pairs {
			if c > bestCount || c == bestCount && (id[p[0]] < id[best[0]] || id[p[0]] == id[best[0]] && id[p[1]] < id[best[1]]) {
				best, bestCount = p, c
			}
		}
		if bestCount == 0 || bestCount < minFreq {
			break
		}
		merges = append(merges, best)
		if _, ok := id[best[0]+best[1]]; !ok {
			id[best[0]+best[1]] = len(id)
		}
		for wi, w := range words {
			var out []string
			for i := 0; i < len(w); i++ {
				if i+1 < len(w) && w[i] == best[0] && w[i+1] == best[1] {
					out = append(out, w[i]+w[i+1])
					i++
					continue
				}
				out = append(out, w[i])
			}
			words[wi] = out
		}
	}
	return merges
}

func TestTrainShakespeare(t *testing.T) {
	start := time.Now()
	m, data := trainedShakespeare(t)
	t.Logf("trained vocab 1000 in %v: %+v", time.Since(start), m.Stats())
	if m.VocabSize() != 1000 {
		t.Fatalf("vocab size %d, want 1000", m.VocabSize())
	}
	if st := m.Stats(); st.Merges != 1000-257 || st.Bytes != int64(len(trainCorpus(t))) || st.UniqueWords == 0 {
		t.Errorf("stats %+v", st)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := LoadHFJSON(raw, "shakespeare-1000")
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != 1000 || tok.EOD() != 0 {
		t.Errorf("loaded: vocab size %d, EOD %d", tok.VocabSize(), tok.EOD())
	}
	if id, ok := tok.ID(trainEOT); !ok || id != 0 {
		t.Errorf("ID(%s) = %d, %v", trainEOT, id, ok)
	}
	for id := 0; id < m.VocabSize(); id++ {
		if got := string(tok.TokenBytes(id)); got != m.Token(id) {
			t.Fatalf("token %d: loaded %q, trained %q", id, got, m.Token(id))
		}
	}

	text := trainCorpus(t)
	for i, line := range strings.SplitAfter(text, "\n") {
		if got := tok.Decode(tok.Encode(line)); got != line {
			t.Fatalf("line %d: round trip %q -> %q", i+1, line, got)
		}
	}
	ids := tok.Encode(text)
	if got := tok.Decode(ids); got != text {
		t.Fatal("whole text does not round-trip")
	}
	perByte := float64(len(ids)) / float64(len(text))
	t.Logf("%d bytes -> %d tokens (%.3f tokens per byte)", len(text), len(ids), perByte)
	if perByte > 0.5 {
		t.Errorf("%.3f tokens per byte; a 1000-token vocabulary should do better than 0.5", perByte)
	}
	if got := tok.Encode("x" + trainEOT + " y"); len(got) != 3 || got[1] != 0 {
		t.Errorf("special in text: %v", got)
	}
}

func TestTrainDeterministic(t *testing.T) {
	text := trainCorpus(t)
	_, want := trainedShakespeare(t)
	// Same input, other worker counts, and the text cut into chunks at TrainCut points
	// (small enough that the workers share them).
	var chunks []string
	for rest := text; len(rest) > 0; {
		p := TrainCut([]byte(rest[:min(len(rest), 50000)]))
		if p == 0 || len(rest) <= 50000 {
			p = len(rest)
		}
		chunks = append(chunks, rest[:p])
		rest = rest[p:]
	}
	if len(chunks) < 10 {
		t.Fatalf("only %d chunks", len(chunks))
	}
	for _, tc := range []struct {
		name    string
		texts   []string
		workers int
	}{
		{"whole/1", []string{text}, 1},
		{"whole/4", []string{text}, 4},
		{"chunks/1", chunks, 1},
		{"chunks/4", chunks, 4},
	} {
		m := mustTrain(t, tc.texts, TrainOptions{VocabSize: 1000, Special: []string{trainEOT}, Workers: tc.workers})
		if got := trainJSON(t, m); !bytes.Equal(got, want) {
			t.Errorf("%s: tokenizer.json differs from the one trained on the whole text", tc.name)
		}
	}
}

func TestTrainCut(t *testing.T) {
	for _, tc := range []struct {
		text string
		want int
	}{
		{"", 0},
		{"abc", 0},
		{"\nabc", 0},
		{"a\nb", 1},
		{"a\nb\nc", 3},
		{"a b c", 3},
		{"a\nb  \nc", 3},        // not inside a whitespace run
		{"a\n\n\n", 1},          // runs of whitespace: cut before the first
		{"a.\t\nb", 2},          // tab
		{"é\nb", 2},             // non-ASCII before the cut
		{"\u3000\nb", 0},        // U+3000 is whitespace
		{"\xff\nb", 1},          // invalid UTF-8 (U+FFFD) is not whitespace
		{"ab's\nx", 4},          // contraction before the cut
		{"x\r\ny", 1},           // \r\n: cut before the \r
		{"<|endoftext|>\n", 13}, // the whitespace may be the last byte
	} {
		if got := TrainCut([]byte(tc.text)); got != tc.want {
			t.Errorf("TrainCut(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
	// Cutting at a TrainCut point never changes the pieces.
	text := trainCorpus(t)[:200000] + "a\n\n\nb  \n c\t\n\nd\u00a0\ne'\ns\n日本。\n中文 x\u3000 y\xff z\r\n"
	whole := trainPieces(text)
	var cut []string
	for rest := text; rest != ""; {
		p := TrainCut([]byte(rest[:min(len(rest), 300)]))
		if p == 0 || len(rest) <= 300 {
			p = len(rest)
		}
		cut = append(cut, trainPieces(rest[:p])...)
		rest = rest[p:]
	}
	if !reflect.DeepEqual(whole, cut) {
		t.Error("pieces of the cut text differ from the pieces of the whole")
	}
}

func trainPieces(s string) []string {
	var out []string
	prev := 0
	for _, end := range splitAll(splitGPT2, new(classWindow), s, nil) {
		out = append(out, s[prev:end])
		prev = end
	}
	return out
}

func TestTrainSpecialsCutOut(t *testing.T) {
	texts := make([]string, 50)
	for i := range texts {
		texts[i] = "hello world" + trainEOT + "hello there" + trainEOT
	}
	m := mustTrain(t, texts, TrainOptions{VocabSize: 400, Special: []string{trainEOT, "<pad>"}})
	for id := 2; id < m.VocabSize(); id++ {
		if tok := m.Token(id); len(tok) > 1 && strings.ContainsAny(tok, "<|>") {
			t.Errorf("token %d %q was learned from a special token", id, tok)
		}
	}
	tok, err := m.Tokenizer("specials")
	if err != nil {
		t.Fatal(err)
	}
	ids := tok.Encode(texts[0] + "<pad>")
	if ids[len(ids)-1] != 1 || ids[len(ids)-2] != 0 {
		t.Errorf("ids %v do not end with <|endoftext|> <pad>", ids)
	}
}

func TestTrainErrors(t *testing.T) {
	for _, tc := range []struct {
		opt  TrainOptions
		want string
	}{
		{TrainOptions{VocabSize: 256, Special: []string{trainEOT}}, "below 257"},
		{TrainOptions{VocabSize: 2000000}, "over 1048575"},
		{TrainOptions{VocabSize: 300, Special: []string{"a"}}, "at least 2"},
		{TrainOptions{VocabSize: 300, Special: []string{"<s> x"}}, "printable ASCII"},
		{TrainOptions{VocabSize: 300, Special: []string{trainEOT, trainEOT}}, "twice"},
		{TrainOptions{VocabSize: 300, MinFrequency: -1}, "negative"},
	} {
		_, err := Train(context.Background(), TrainTexts([]string{"abc"}), tc.opt)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want one containing %q", tc.opt, err, tc.want)
		}
	}

	readErr := errors.New("disk on fire")
	_, err := Train(context.Background(), func(yield func(string) bool) error {
		yield("some text")
		return readErr
	}, TrainOptions{VocabSize: 300})
	if !errors.Is(err, readErr) {
		t.Errorf("source error: got %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Train(ctx, TrainTexts([]string{"abc abc"}), TrainOptions{VocabSize: 300})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("canceled context: got %v", err)
	}
}

func TestTrainProgress(t *testing.T) {
	last := map[string][2]int64{}
	calls := 0
	opt := TrainOptions{VocabSize: 300, MinFrequency: 1, Progress: func(stage string, done, total int64) {
		calls++
		last[stage] = [2]int64{done, total}
	}}
	mustTrain(t, []string{"the cat sat on the mat", "the dog"}, opt)
	if calls == 0 || last["count"] != [2]int64{29, 29} || last["merge"][1] != 300-256 {
		t.Errorf("progress: %d calls, last %v", calls, last)
	}
}

func TestTrainInvalidUTF8(t *testing.T) {
	// Training sees the text Encode sees: invalid UTF-8 replaced by U+FFFD.
	texts := []string{"caf\xe9 caf\xe9 caf\xe9", "caf\uFFFD caf\uFFFD caf\uFFFD"}
	a := mustTrain(t, texts[:1], TrainOptions{VocabSize: 300})
	b := mustTrain(t, texts[1:], TrainOptions{VocabSize: 300})
	if !bytes.Equal(trainJSON(t, a), trainJSON(t, b)) {
		t.Error("invalid UTF-8 is not trained as U+FFFD")
	}
}

// trainNodePeers returns the node_modules directory holding HF `tokenizers` (see
// tools/install-peers.sh). Missing node or peers fail the test in CI and skip it elsewhere.
func trainNodePeers(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("needs node and HF tokenizers; skipped with -short")
	}
	missing := func(format string, args ...any) { sharedtest.Missing(t, format, args...) }
	if _, err := exec.LookPath("node"); err != nil {
		missing("node not found: %v", err)
	}
	out, err := exec.Command("bash", filepath.Join("..", "tools", "install-peers.sh")).Output()
	dir := strings.TrimSpace(string(out))
	if err != nil || dir == "" {
		missing("tools/install-peers.sh: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "tokenizers", "package.json")); err != nil {
		missing("HF tokenizers not installed: %v", err)
	}
	return dir
}

func trainRunNode(t *testing.T, peers string, stdin []byte, args ...string) []byte {
	t.Helper()
	cmd := exec.Command("node", args...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+peers)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %v: %v\n%s", args, err, stderr.Bytes())
	}
	return out
}

// TestTrainHFParity: HF tokenizers loads the written tokenizer.json and gives the same ids.
func TestTrainHFParity(t *testing.T) {
	peers := trainNodePeers(t)
	_, data := trainedShakespeare(t)
	path := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	tok, err := LoadHFJSON(data, "shakespeare-1000")
	if err != nil {
		t.Fatal(err)
	}
	text := trainCorpus(t)
	lines := strings.SplitAfter(text, "\n")
	var texts []string
	for i := 0; i < len(lines) && len(texts) < 200; i += 97 {
		texts = append(texts, lines[i])
	}
	texts = append(texts, text[:3000], text[len(text)/2:len(text)/2+3000],
		"", " ", "  ", "   leading", "trailing   ", "a  b   c    d", "tabs\t\tand\nnewlines\n\n\nx",
		"\r\nwindows\r\n", "it's IT'S it''s we'll they've I'd", "123 4567 8.9e10",
		"héllo wörld — “quotes” 日本語 🙂 \u00a0nbsp \u2028sep", "e\u0301 combining",
		trainEOT, "x"+trainEOT+" y", trainEOT+trainEOT+"\n"+trainEOT, "<|endoftext", "<|endoftext|>>", "<< || >>",
	)
	var in bytes.Buffer
	enc := json.NewEncoder(&in)
	for _, s := range texts {
		if err := enc.Encode(map[string]string{"text": s}); err != nil {
			t.Fatal(err)
		}
	}
	out := trainRunNode(t, peers, in.Bytes(), filepath.Join("testdata", "hf_encode.js"), path)
	results := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(results) != len(texts) {
		t.Fatalf("hf_encode.js gave %d results for %d texts", len(results), len(texts))
	}
	for n, line := range results {
		var rec struct{ IDs []int }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("hf_encode.js line %d: %v", n+1, err)
		}
		got := tok.Encode(texts[n])
		if len(got) != len(rec.IDs) || len(got) > 0 && !reflect.DeepEqual(got, rec.IDs) {
			t.Errorf("text %d %.60q: ours %v, HF %v", n, texts[n], got, rec.IDs)
		}
	}
	t.Logf("HF and ours agree on %d texts", len(texts))
}

// TestTrainMatchesHFTrainer: on tinyshakespeare, fed line by line as HF's train(files)
// reads it, our merges equal those of HF's own BpeTrainer (min_frequency 0, run until no
// pair is left: about 21,000 merges, most of them ties at count 1).
func TestTrainMatchesHFTrainer(t *testing.T) {
	peers := trainNodePeers(t)
	corpus := testfiles.Path(t, "corpora/tinyshakespeare.txt")
	out := filepath.Join(t.TempDir(), "hf.json")
	trainRunNode(t, peers, nil, filepath.Join("testdata", "hf_train.js"), corpus, out)
	raw, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var hf struct {
		Model struct {
			Vocab  map[string]int  `json:"vocab"`
			Merges json.RawMessage `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(raw, &hf); err != nil {
		t.Fatal(err)
	}
	hfMerges, err := parseHFMerges(hf.Model.Merges)
	if err != nil {
		t.Fatal(err)
	}
	if len(hf.Model.Vocab) >= 30000 {
		t.Fatalf("HF's trainer stopped at its vocab size (%d), not by running out of pairs", len(hf.Model.Vocab))
	}

	start := time.Now()
	lines := strings.SplitAfter(trainCorpus(t), "\n")
	m := mustTrain(t, lines, TrainOptions{VocabSize: pairLimit, MinFrequency: 1})
	t.Logf("ours: %d merges in %v; HF: %d merges", len(m.merges), time.Since(start), len(hfMerges))
	if len(m.merges) != len(hfMerges) {
		t.Errorf("%d merges, HF has %d", len(m.merges), len(hfMerges))
	}
	for i := 0; i < min(len(m.merges), len(hfMerges)); i++ {
		p := m.merges[i]
		if got := [2]string{m.keys[p[0]], m.keys[p[1]]}; got != hfMerges[i] {
			t.Fatalf("merge %d: ours %q, HF %q", i, got, hfMerges[i])
		}
	}
}

func BenchmarkTrainShakespeare(b *testing.B) {
	text := trainCorpus(b)
	for _, vocab := range []int{1000, 5000} {
		b.Run(fmt.Sprintf("vocab=%d", vocab), func(b *testing.B) {
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				mustTrain(b, []string{text}, TrainOptions{VocabSize: vocab, Special: []string{trainEOT}})
			}
		})
	}
}
