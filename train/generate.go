package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
)

// SampleOptions tune Generate.
type SampleOptions struct {
	MaxNewTokens int
	// Temperature divides the logits (nanoGPT's sample.py); 0 means greedy (argmax).
	Temperature float64
	// TopK keeps the K most likely tokens (0: all).
	TopK int
	// Seed seeds the draws (PCG).
	Seed uint64
	// StopTokens end generation after any of them (e.g. the end-of-document id);
	// none: MaxNewTokens are generated.
	StopTokens []int
}

// Generate continues prompt with up to MaxNewTokens tokens, as nanoGPT's
// generate: each step runs the model on the last block_size tokens, scales the
// last position's logits by 1/temperature, keeps the top k, and draws from the
// softmax. It returns the new tokens only.
func Generate(m *Model, prompt []int32, o SampleOptions) ([]int32, error) {
	if len(prompt) == 0 {
		return nil, errors.New("train: generate needs a prompt of at least one token")
	}
	if o.Temperature < 0 || math.IsNaN(o.Temperature) {
		return nil, fmt.Errorf("train: temperature %g: want >= 0", o.Temperature)
	}
	if o.TopK < 0 {
		return nil, fmt.Errorf("train: top-k %d: want >= 0", o.TopK)
	}
	V := m.Config.VocabSize
	for _, id := range prompt {
		if id < 0 || int(id) >= V {
			return nil, fmt.Errorf("train: prompt token %d is outside the model's vocabulary [0,%d)", id, V)
		}
	}
	if err := m.Reserve(1, m.Config.BlockSize, false); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x5eed))
	seq := slices.Clone(prompt)
	probs := make([]float64, V)
	order := make([]int, V)
	var out []int32
	for range o.MaxNewTokens {
		ctx := seq[max(0, len(seq)-m.Config.BlockSize):]
		m.Forward(ctx, nil, 1, len(ctx))
		logits := m.Logits(len(ctx) - 1)
		next := pick(logits, probs, order, o, rng)
		out = append(out, int32(next))
		seq = append(seq, int32(next))
		if slices.Contains(o.StopTokens, next) {
			break
		}
	}
	return out, nil
}

// pick draws the next token from one row of logits.
func pick(logits []float32, probs []float64, order []int, o SampleOptions, rng *rand.Rand) int {
	if o.Temperature == 0 {
		best := 0
		for i, l := range logits {
			if l > logits[best] {
				best = i
			}
		}
		return best
	}
	// The largest logit subtracted before dividing, not after: l/T overflows to +Inf
	// for a tiny T (1e-310), and exp(Inf-Inf) made every weight NaN.
	lmax := math.Inf(-1)
	for _, l := range logits {
		lmax = math.Max(lmax, float64(l))
	}
	mx := math.Inf(-1)
	for i, l := range logits {
		probs[i] = (float64(l) - lmax) / o.Temperature
		mx = math.Max(mx, probs[i])
	}
	cut := math.Inf(-1)
	if o.TopK > 0 && o.TopK < len(logits) {
		// nanoGPT: logits below the k-th largest become -inf (ties with it stay).
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(a, b int) int {
			switch {
			case probs[a] > probs[b]:
				return -1
			case probs[a] < probs[b]:
				return 1
			}
			return 0
		})
		cut = probs[order[o.TopK-1]]
	}
	sum := 0.0
	for i, z := range probs {
		if z < cut {
			probs[i] = 0
			continue
		}
		probs[i] = math.Exp(z - mx)
		sum += probs[i]
	}
	u := rng.Float64() * sum
	last := 0
	for i, p := range probs {
		if p == 0 {
			continue
		}
		last = i
		if u -= p; u < 0 {
			return i
		}
	}
	return last
}

// Score returns the mean cross-entropy of every next-token prediction in seqs (each
// token after the first of each sequence, given the ones before it) and the number
// of predictions. A sequence may hold at most block_size+1 tokens.
func Score(m *Model, seqs [][]int32) (loss float64, count int, err error) {
	T := m.Config.BlockSize
	if err := m.Reserve(1, T, false); err != nil {
		return 0, 0, err
	}
	m.ResetLoss()
	for k, s := range seqs {
		if len(s) < 2 {
			continue
		}
		if len(s)-1 > T {
			return 0, 0, fmt.Errorf("train: sequence %d has %d tokens; the model's block_size %d allows at most %d (split it)", k, len(s), T, T+1)
		}
		for _, id := range s {
			if id < 0 || int(id) >= m.Config.VocabSize {
				return 0, 0, fmt.Errorf("train: sequence %d: token %d is outside the model's vocabulary [0,%d)", k, id, m.Config.VocabSize)
			}
		}
		n := len(s) - 1
		count += m.Forward(s[:n], s[1:], 1, n)
	}
	if count == 0 {
		return 0, 0, errors.New("train: nothing to score: every sequence has fewer than 2 tokens")
	}
	return m.LossSum() / float64(count), count, nil
}
