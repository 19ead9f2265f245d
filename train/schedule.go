package train

import "math"

// LRAt is nanoGPT's get_lr: the learning rate of the update with 0-based index it
// (optimizer step it+1). Linear warmup lr·(it+1)/(warmup+1) for it < warmup, then
// a cosine from lr down to min_lr at lr_decay_steps, then min_lr.
func (c *Config) LRAt(it int) float64 {
	if it < c.WarmupSteps {
		return c.LR * float64(it+1) / float64(c.WarmupSteps+1)
	}
	if it > c.LRDecaySteps {
		return c.MinLR
	}
	if c.LRDecaySteps == c.WarmupSteps {
		return c.MinLR
	}
	ratio := float64(it-c.WarmupSteps) / float64(c.LRDecaySteps-c.WarmupSteps)
	coeff := 0.5 * (1 + math.Cos(math.Pi*ratio))
	return c.MinLR + coeff*(c.LR-c.MinLR)
}
