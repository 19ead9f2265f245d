package train

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"gptkit/kernels"
	"gptkit/kernels/cpu"
	"gptkit/kernels/ref"
)

// f64Model is an independent float64 GPT forward (plain loops, written from
// nanoGPT's model.py) over a parameter vector laid out like Model.Params: the
// yardstick for the model's forward and, by central differences, its backward.
type f64Model struct {
	mc      ModelConfig
	tensors map[string]TensorInfo
	p       []float64
	dropout float32
	key     uint64 // dropout key; dropout applies when dropout > 0
}

func (f *f64Model) t(name string) []float64 {
	ti, ok := f.tensors[name]
	if !ok {
		return nil
	}
	return f.p[ti.Offset : ti.Offset+ti.Size]
}

func (f *f64Model) layerNorm(x []float64, w, b []float64, N, C int) []float64 {
	out := make([]float64, N*C)
	for i := range N {
		row := x[i*C : (i+1)*C]
		var mean, v float64
		for _, e := range row {
			mean += e
		}
		mean /= float64(C)
		for _, e := range row {
			v += (e - mean) * (e - mean)
		}
		v /= float64(C)
		rstd := 1 / math.Sqrt(v+1e-5)
		for c := range C {
			y := (row[c] - mean) * rstd * w[c]
			if b != nil {
				y += b[c]
			}
			out[i*C+c] = y
		}
	}
	return out
}

func (f *f64Model) linear(x, w, b []float64, N, C, OC int) []float64 {
	out := make([]float64, N*OC)
	for i := range N {
		for o := range OC {
			s := 0.0
			if b != nil {
				s = b[o]
			}
			for c := range C {
				s += x[i*C+c] * w[o*C+c]
			}
			out[i*OC+o] = s
		}
	}
	return out
}

func (f *f64Model) drop(x []float64, layer, site int) []float64 {
	if f.dropout == 0 {
		return x
	}
	seed := dropSeed(f.key, layer, site)
	out := make([]float64, len(x))
	scale := float64(kernels.DropoutScale(f.dropout))
	for i := range x {
		if kernels.DropoutKeep(seed, i, f.dropout) {
			out[i] = x[i] * scale
		}
	}
	return out
}

// loss is the mean cross-entropy of targets given inputs (B x T).
func (f *f64Model) loss(inputs, targets []int32, B, T int) float64 {
	mc := f.mc
	C, NH, V, N := mc.NEmbd, mc.NHead, mc.VocabSize, B*T
	hs := C / NH
	wte, wpe := f.t("transformer.wte.weight"), f.t("transformer.wpe.weight")
	x := make([]float64, N*C)
	for b := range B {
		for tt := range T {
			id := int(inputs[b*T+tt])
			for c := range C {
				x[(b*T+tt)*C+c] = wte[id*C+c] + wpe[tt*C+c]
			}
		}
	}
	x = f.drop(x, 0, siteEmbed)
	for l := range mc.NLayer {
		p := "transformer.h." + strconv.Itoa(l) + "."
		ln1 := f.layerNorm(x, f.t(p+"ln_1.weight"), f.t(p+"ln_1.bias"), N, C)
		qkv := f.linear(ln1, f.t(p+"attn.c_attn.weight"), f.t(p+"attn.c_attn.bias"), N, C, 3*C)
		y := make([]float64, N*C)
		for b := range B {
			for h := range NH {
				for t1 := range T {
					q := qkv[(b*T+t1)*3*C+h*hs:]
					att := make([]float64, t1+1)
					mx := math.Inf(-1)
					for t2 := 0; t2 <= t1; t2++ {
						k := qkv[(b*T+t2)*3*C+C+h*hs:]
						s := 0.0
						for i := range hs {
							s += q[i] * k[i]
						}
						att[t2] = s / math.Sqrt(float64(hs))
						mx = math.Max(mx, att[t2])
					}
					sum := 0.0
					for t2 := range att {
						att[t2] = math.Exp(att[t2] - mx)
						sum += att[t2]
					}
					for t2 := range att {
						v := qkv[(b*T+t2)*3*C+2*C+h*hs:]
						for i := range hs {
							y[(b*T+t1)*C+h*hs+i] += att[t2] / sum * v[i]
						}
					}
				}
			}
		}
		proj := f.drop(f.linear(y, f.t(p+"attn.c_proj.weight"), f.t(p+"attn.c_proj.bias"), N, C, C), l, siteAttn)
		for i := range x {
			x[i] += proj[i]
		}
		ln2 := f.layerNorm(x, f.t(p+"ln_2.weight"), f.t(p+"ln_2.bias"), N, C)
		h := f.linear(ln2, f.t(p+"mlp.c_fc.weight"), f.t(p+"mlp.c_fc.bias"), N, C, 4*C)
		for i, v := range h {
			h[i] = 0.5 * v * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(v+0.044715*v*v*v)))
		}
		proj = f.drop(f.linear(h, f.t(p+"mlp.c_proj.weight"), f.t(p+"mlp.c_proj.bias"), N, 4*C, C), l, siteMLP)
		for i := range x {
			x[i] += proj[i]
		}
	}
	lnf := f.layerNorm(x, f.t("transformer.ln_f.weight"), f.t("transformer.ln_f.bias"), N, C)
	logits := f.linear(lnf, wte[:V*C], nil, N, C, V) // the padded rows never count
	total := 0.0
	for i := range N {
		row := logits[i*V : (i+1)*V]
		mx := math.Inf(-1)
		for _, v := range row {
			mx = math.Max(mx, v)
		}
		sum := 0.0
		for _, v := range row {
			sum += math.Exp(v - mx)
		}
		total += math.Log(sum) + mx - row[targets[i]]
	}
	return total / float64(N)
}

func tinyModel(t *testing.T, be kernels.Backend, bias bool, seed uint64) *Model {
	t.Helper()
	mc := ModelConfig{VocabSize: 11, PaddedVocab: PaddedVocab(11), NLayer: 2, NHead: 2, NEmbd: 8, BlockSize: 6, Bias: bias}
	m, err := NewModel(be, mc)
	if err != nil {
		t.Fatal(err)
	}
	m.Init(seed)
	// Larger, less regular weights than the init's, so every path carries gradient.
	rng := rand.New(rand.NewPCG(seed, 7))
	p := m.ReadParams()
	for _, ti := range m.Tensors {
		for i := range ti.Size {
			p[ti.Offset+i] += float32(rng.NormFloat64() * 0.3)
		}
	}
	m.SetParams(p)
	return m
}

func randomTokens(rng *rand.Rand, n, V int) []int32 {
	out := make([]int32, n)
	for i := range out {
		out[i] = int32(rng.IntN(V))
	}
	return out
}

// TestModelGradients checks the model's forward against the float64 reference and
// its backward (all parameters, with and without biases and dropout) against
// float64 central differences of it.
func TestModelGradients(t *testing.T) {
	for _, tc := range []struct {
		name    string
		be      kernels.Backend
		bias    bool
		dropout float32
	}{
		{"ref/nobias", ref.New(), false, 0}, {"ref/bias", ref.New(), true, 0}, {"ref/dropout", ref.New(), true, 0.25},
		{"cpu/nobias", cpu.New(3), false, 0}, {"cpu/dropout", cpu.New(3), true, 0.25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			be := tc.be
			m := tinyModel(t, be, tc.bias, 3)
			m.Dropout = tc.dropout
			B, T := 2, m.Config.BlockSize
			rng := rand.New(rand.NewPCG(5, 5))
			in, tgt := randomTokens(rng, B*T, m.Config.VocabSize), randomTokens(rng, B*T, m.Config.VocabSize)
			const key = 0xfeed
			if err := m.AllocGrads(); err != nil {
				t.Fatal(err)
			}
			if err := m.Reserve(B, T, true); err != nil {
				t.Fatal(err)
			}
			m.ResetLoss()
			n := m.Step(in, tgt, B, T, float32(1/float64(B*T)), key)
			got := m.LossSum() / float64(n)
			grads := readHost(m.be, m.Grads)

			f := &f64Model{mc: m.Config, tensors: map[string]TensorInfo{}, dropout: tc.dropout, key: key}
			for _, ti := range m.Tensors {
				f.tensors[ti.Name] = ti
			}
			f.p = make([]float64, m.Params.Len())
			for i, v := range m.ReadParams() {
				f.p[i] = float64(v)
			}
			want := f.loss(in, tgt, B, T)
			if math.Abs(got-want) > 1e-5*math.Abs(want) {
				t.Fatalf("loss %.9g, float64 reference %.9g", got, want)
			}

			const h = 1e-5
			worst, checked := 0.0, 0
			for _, ti := range m.Tensors {
				for i := range ti.Size {
					k := ti.Offset + i
					if ti.Name == "transformer.wte.weight" && i >= m.Config.VocabSize*m.Config.NEmbd {
						if grads[k] != 0 {
							t.Fatalf("padded row of wte: gradient %g at %d, want 0", grads[k], i)
						}
						continue
					}
					old := f.p[k]
					f.p[k] = old + h
					lp := f.loss(in, tgt, B, T)
					f.p[k] = old - h
					lm := f.loss(in, tgt, B, T)
					f.p[k] = old
					fd := (lp - lm) / (2 * h)
					g := float64(grads[k])
					errv := math.Abs(g-fd) / (1e-4 + math.Abs(fd))
					if errv > worst {
						worst = errv
					}
					if math.Abs(g-fd) > 2e-4+2e-3*math.Abs(fd) {
						t.Errorf("%s[%d]: gradient %.7g, float64 finite difference %.7g", ti.Name, i, g, fd)
					}
					checked++
				}
			}
			t.Logf("%d gradients checked; worst relative error %.2g", checked, worst)
		})
	}
}

// TestModelLayout: the two regions, every tensor's place, and the views.
func TestModelLayout(t *testing.T) {
	mc := ModelConfig{VocabSize: 50257, PaddedVocab: PaddedVocab(50257), NLayer: 12, NHead: 12, NEmbd: 768, BlockSize: 1024}
	if mc.PaddedVocab != 50304 {
		t.Fatalf("padded vocab %d, want 50304", mc.PaddedVocab)
	}
	// GPT-2 124M with bias=False and vocab 50304: wte 50304x768 + wpe 1024x768 +
	// 12 x (c_attn 3x768x768 + c_proj 768x768 + c_fc and mlp c_proj 2 x 4x768x768 +
	// ln_1, ln_2 2x768) + ln_f 768 = 124,373,760 (nanoGPT's get_num_params with
	// non_embedding=False).
	if n := mc.NumParams(); n != 124373760 {
		t.Errorf("params %d, want 124373760", n)
	}
	tensors, decayLen, total := mc.Layout()
	for _, ti := range tensors {
		if ti.Offset%align != 0 {
			t.Errorf("%s at %d: not aligned", ti.Name, ti.Offset)
		}
		if ti.Decay != (len(ti.Shape) == 2) {
			t.Errorf("%s: decay %t with shape %v", ti.Name, ti.Decay, ti.Shape)
		}
		if ti.Decay != (ti.Offset+ti.Size <= decayLen) {
			t.Errorf("%s: decay %t but at [%d,%d) with the decay region [0,%d)", ti.Name, ti.Decay, ti.Offset, ti.Offset+ti.Size, decayLen)
		}
		if ti.Offset+ti.Size > total {
			t.Errorf("%s past the end", ti.Name)
		}
	}
}

// TestInitDeterministic: the same seed gives the same bits, another seed others;
// the statistics are GPT-2's.
func TestInitDeterministic(t *testing.T) {
	mc := ModelConfig{VocabSize: 65, PaddedVocab: 128, NLayer: 4, NHead: 4, NEmbd: 128, BlockSize: 64}
	a, _ := NewModel(ref.New(), mc)
	b, _ := NewModel(ref.New(), mc)
	c, _ := NewModel(ref.New(), mc)
	a.Init(1337)
	b.Init(1337)
	c.Init(1338)
	ap, bp, cp := a.ReadParams(), b.ReadParams(), c.ReadParams()
	for i := range ap {
		if math.Float32bits(ap[i]) != math.Float32bits(bp[i]) {
			t.Fatalf("param %d differs between two inits with one seed", i)
		}
	}
	same := 0
	for i := range ap {
		if ap[i] == cp[i] {
			same++
		}
	}
	std := func(v []float32) float64 {
		s := 0.0
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		return math.Sqrt(s / float64(len(v)))
	}
	if s := std(a.Tensor(ap, "transformer.h.0.mlp.c_fc.weight")); math.Abs(s-0.02) > 0.001 {
		t.Errorf("c_fc std %g, want 0.02", s)
	}
	if s, want := std(a.Tensor(ap, "transformer.h.0.mlp.c_proj.weight")), 0.02/math.Sqrt(8); math.Abs(s-want) > 0.0005 {
		t.Errorf("c_proj std %g, want %g", s, want)
	}
	if v := a.Tensor(ap, "transformer.ln_f.weight"); v[0] != 1 || v[127] != 1 {
		t.Errorf("ln_f weight %g, want 1", v[0])
	}
	if same > len(ap)/2 {
		t.Errorf("seeds 1337 and 1338 agree on %d of %d params", same, len(ap))
	}
}
