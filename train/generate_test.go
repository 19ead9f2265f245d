package train

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gptkit/kernels/ref"
)

// trainedTiny trains the tiny model on the pattern data and loads its checkpoint.
func trainedTiny(t *testing.T) (*Model, *State) {
	t.Helper()
	cfg := tinyConfig(t, tinyDataset(t))
	cfg.MaxSteps, cfg.LRDecaySteps, cfg.Dropout, cfg.EvalSteps = 80, 80, 0, 0
	if _, err := Run(context.Background(), cfg, ref.New(), Single{}, testLogger(t)); err != nil {
		t.Fatal(err)
	}
	m, st, err := LoadCheckpoint(context.Background(), cfg.Out, ref.New())
	if err != nil {
		t.Fatal(err)
	}
	if st.Step != 80 || st.Tokenizer.Fingerprint != "tiny-fp-1" {
		t.Fatalf("state %+v", st)
	}
	return m, st
}

func TestGenerateAndScore(t *testing.T) {
	m, _ := trainedTiny(t)

	// Greedy continuation of a counting run counts on.
	out, err := Generate(m, []int32{3, 4, 5, 6}, SampleOptions{MaxNewTokens: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out, []int32{7, 8, 9}) {
		t.Errorf("greedy after 3 4 5 6: %v, want 7 8 9", out)
	}
	// StopTokens end it after one of them; none (the zero value) goes on past
	// token 0 (the count wraps at the vocabulary's 20).
	if out, _ := Generate(m, []int32{3, 4, 5, 6}, SampleOptions{MaxNewTokens: 3, StopTokens: []int{8}}); !slices.Equal(out, []int32{7, 8}) {
		t.Errorf("greedy after 3 4 5 6 stopping at 8: %v, want 7 8", out)
	}
	if out, _ := Generate(m, []int32{15, 16, 17, 18}, SampleOptions{MaxNewTokens: 4}); !slices.Equal(out, []int32{19, 0, 1, 2}) {
		t.Errorf("greedy after 15 16 17 18: %v, want 19 0 1 2", out)
	}
	// Top-1 sampling is greedy; a seed fixes the draws; generation goes past block_size.
	long := SampleOptions{MaxNewTokens: 40, Temperature: 1, TopK: 1, Seed: 1}
	a, _ := Generate(m, []int32{3}, long)
	long.Temperature = 0
	b, _ := Generate(m, []int32{3}, long)
	if !slices.Equal(a, b) || len(a) != 40 {
		t.Errorf("top-k 1 %v, greedy %v", a, b)
	}
	s := SampleOptions{MaxNewTokens: 30, Temperature: 1.5, Seed: 9}
	c, _ := Generate(m, []int32{3}, s)
	d, _ := Generate(m, []int32{3}, s)
	s.Seed = 10
	e, _ := Generate(m, []int32{3}, s)
	if !slices.Equal(c, d) || slices.Equal(c, e) {
		t.Errorf("seeded sampling: %v, %v, another seed %v", c, d, e)
	}
	if _, err := Generate(m, nil, s); err == nil {
		t.Error("empty prompt accepted")
	}
	if _, err := Generate(m, []int32{20}, s); err == nil {
		t.Error("a prompt token outside the vocabulary accepted")
	}

	// Score is the float64 reference's mean cross-entropy over all predictions.
	seqs := [][]int32{{3, 4, 5, 6, 7, 8}, {1}, {9, 2, 11, 12, 13, 14, 15, 16, 17, 18, 19, 0, 1, 2, 3, 4, 5}}
	loss, n, err := Score(m, seqs)
	if err != nil {
		t.Fatal(err)
	}
	f := &f64Model{mc: m.Config, tensors: map[string]TensorInfo{}}
	for _, ti := range m.Tensors {
		f.tensors[ti.Name] = ti
	}
	f.p = make([]float64, m.Params.Len())
	for i, v := range m.ReadParams() {
		f.p[i] = float64(v)
	}
	var sum float64
	for _, s := range seqs {
		if k := len(s) - 1; k > 0 {
			sum += f.loss(s[:k], s[1:], 1, k) * float64(k)
		}
	}
	want := sum / 21
	if n != 21 || math.Abs(loss-want) > 1e-5*want {
		t.Errorf("score %.7g over %d, float64 reference %.7g over 21", loss, n, want)
	}
	if _, _, err := Score(m, [][]int32{make([]int32, m.Config.BlockSize+2)}); err == nil {
		t.Error("a sequence longer than block_size+1 scored")
	}
	if _, _, err := Score(m, [][]int32{{1}}); err == nil {
		t.Error("nothing to score, no error")
	}
}

// TestPickTinyTemperature: a temperature small enough that logit/T overflows still
// draws the argmax (it drew the last token with a weight: every weight was NaN).
func TestPickTinyTemperature(t *testing.T) {
	logits := []float32{1, 5, 2, -3}
	probs, order := make([]float64, len(logits)), make([]int, len(logits))
	rng := rand.New(rand.NewPCG(1, 2))
	for _, temp := range []float64{1e-310, 1e-300, 1e-30} {
		for range 20 {
			if got := pick(logits, probs, order, SampleOptions{Temperature: temp, TopK: 0}, rng); got != 1 {
				t.Fatalf("temperature %g: token %d, want the argmax 1", temp, got)
			}
		}
	}
}
