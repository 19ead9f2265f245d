package train

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"

	"gptkit/kernels"
)

// Model is a GPT-2 (nanoGPT's GPT) over a kernels.Backend: parameters in one flat
// buffer with named views, gradients mirroring it, and activations for one
// micro-batch shape.
type Model struct {
	Config ModelConfig
	// Dropout is the dropout probability of a training forward pass.
	Dropout float32

	be       kernels.Backend
	alloc    func(n int) []float32 // Params' and Grads' memory: be.Alloc, or shared memory
	Tensors  []TensorInfo          // the layout of Params (and Grads)
	DecayLen int                   // Params[:DecayLen] get weight decay, Params[DecayLen:] not
	Params   []float32
	Grads    []float32 // nil until AllocGrads

	// padded is the length Params and Grads can be resliced to (their capacity
	// as allocated): the collectives of data parallelism work on whole blocks and
	// equal shards; the padding stays zero.
	padded int
	// gradsDone, if set, is called by Backward when a stage's gradients are final
	// (gradient buckets): stage NLayer after the final LayerNorm, l after block l,
	// -1 after the embeddings.
	gradsDone func(stage int)

	p, g weights
	a    *activations
}

// NewModel allocates a zeroed model of shape mc on be (call Init or load weights).
func NewModel(be kernels.Backend, mc ModelConfig) (*Model, error) { return newModel(be, mc, 0, nil) }

// newModel is NewModel with Params (and Grads) allocated padded floats long by
// alloc (nil: be.Alloc) and sliced to the layout's length (padded <= the length:
// none).
func newModel(be kernels.Backend, mc ModelConfig, padded int, alloc func(n int) []float32) (*Model, error) {
	if err := mc.Validate(); err != nil {
		return nil, err
	}
	tensors, decayLen, total := mc.Layout()
	padded = max(padded, total)
	if alloc == nil {
		alloc = be.Alloc
	}
	m := &Model{Config: mc, be: be, alloc: alloc, Tensors: tensors, DecayLen: decayLen, Params: alloc(padded)[:total], padded: padded}
	m.p = views(mc, tensors, m.Params)
	return m, nil
}

// AllocGrads allocates the gradient buffer (training needs it; sampling does not).
func (m *Model) AllocGrads() {
	if m.Grads == nil {
		m.Grads = m.alloc(m.padded)[:len(m.Params)]
		m.g = views(m.Config, m.Tensors, m.Grads)
	}
}

// Tensor returns the view of the tensor name in buf (Params, Grads or a buffer of
// the same layout), or nil.
func (m *Model) Tensor(buf []float32, name string) []float32 {
	for _, t := range m.Tensors {
		if t.Name == name {
			return buf[t.Offset : t.Offset+t.Size : t.Offset+t.Size]
		}
	}
	return nil
}

// Init sets the weights as nanoGPT's GPT does: Linear and Embedding weights from
// N(0, 0.02), the residual projections (attn.c_proj and mlp.c_proj weights) from
// N(0, 0.02/sqrt(2·n_layer)), biases 0, LayerNorm weights 1. Each tensor draws from
// its own PCG stream keyed by (seed, its name), so the values do not depend on the
// layout.
func (m *Model) Init(seed uint64) {
	m.be.Zero(m.Params)
	m.be.Sync() // Zero runs on the device's stream: it must be done before the host writes
	resid := 0.02 / math.Sqrt(2*float64(m.Config.NLayer))
	for _, t := range m.Tensors {
		v := m.Params[t.Offset : t.Offset+t.Size]
		switch {
		case strings.Contains(t.Name, ".ln_") && strings.HasSuffix(t.Name, ".weight"):
			for i := range v {
				v[i] = 1
			}
		case strings.HasSuffix(t.Name, ".bias"):
			// zero
		default:
			std := 0.02
			if strings.HasSuffix(t.Name, "c_proj.weight") {
				std = resid
			}
			h := fnv.New64a()
			h.Write([]byte(t.Name))
			rng := rand.New(rand.NewPCG(seed, h.Sum64()))
			for i := range v {
				v[i] = float32(rng.NormFloat64() * std)
			}
		}
	}
}

// activations are the saved forward values of one micro-batch of at most B x T
// tokens, and the backward's scratch buffers.
type activations struct {
	B, T  int  // capacity
	grads bool // the backward buffers exist

	encoded, encodedDrop  []float32 // (B,T,C)
	layers                []layerActs
	lnf, lnfMean, lnfRstd []float32
	logits, probs, losses []float32 // (B,T,Vp), (B,T,Vp), (B,T); logits doubles as dlogits
	inputs, targets       []int32

	// Backward scratch.
	dres, dbtc, ddrop, dqkv, dfch, dfchGelu []float32

	// The last forward pass's shape and dropout.
	curB, curT int
	dropped    bool
	dropKey    uint64
}

type layerActs struct {
	ln1, ln1Mean, ln1Rstd, qkv, atty, att, attProj, attProjDrop, res2 []float32
	ln2, ln2Mean, ln2Rstd, fch, fchGelu, fcProj, fcProjDrop, res3     []float32
}

// Reserve allocates the activations for micro-batches of up to B x T tokens (T at
// most block_size), with the backward's buffers when grads is true. Smaller
// batches reuse them.
func (m *Model) Reserve(B, T int, grads bool) {
	if a := m.a; a != nil && a.B >= B && a.T >= T && (a.grads || !grads) {
		return
	}
	if T > m.Config.BlockSize {
		panic(fmt.Sprintf("train: T %d > block_size %d", T, m.Config.BlockSize))
	}
	mc := m.Config
	C, NH, Vp, N := mc.NEmbd, mc.NHead, mc.PaddedVocab, B*T
	al := m.be.Alloc
	drop := m.Dropout > 0
	a := &activations{B: B, T: T, grads: grads}
	a.encoded = al(N * C)
	if drop {
		a.encodedDrop = al(N * C)
	}
	for range mc.NLayer {
		la := layerActs{
			ln1: al(N * C), ln1Mean: al(N), ln1Rstd: al(N), qkv: al(N * 3 * C), atty: al(N * C),
			att: al(B * NH * T * T), attProj: al(N * C), res2: al(N * C),
			ln2: al(N * C), ln2Mean: al(N), ln2Rstd: al(N), fch: al(N * 4 * C), fchGelu: al(N * 4 * C),
			fcProj: al(N * C), res3: al(N * C),
		}
		if drop {
			la.attProjDrop, la.fcProjDrop = al(N*C), al(N*C)
		}
		a.layers = append(a.layers, la)
	}
	a.lnf, a.lnfMean, a.lnfRstd = al(N*C), al(N), al(N)
	a.logits, a.probs, a.losses = al(N*Vp), al(N*Vp), al(N)
	a.inputs, a.targets = make([]int32, N), make([]int32, N)
	if grads {
		a.dres, a.dbtc, a.dqkv = al(N*C), al(N*C), al(N*3*C)
		a.dfch, a.dfchGelu = al(N*4*C), al(N*4*C)
		if drop {
			a.ddrop = al(N * C)
		}
	}
	m.a = a
}

// Dropout sites, part of a dropout key.
const (
	siteEmbed = iota
	siteAttn
	siteMLP
)

// dropSeed is the dropout seed of one site of one forward pass: a splitmix64 hash
// of the pass's key, the layer and the site.
func dropSeed(key uint64, layer, site int) uint64 {
	return mix64(mix64(key^uint64(layer+1)<<20) ^ uint64(site+1))
}

// mix64 is splitmix64's finalizer.
func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Forward runs the model on inputs (B*T token ids, row-major) and, when targets is
// not nil, the cross-entropy against them (a target < 0 is ignored). With train
// true and Dropout > 0 it applies dropout keyed by dropKey. It returns the sum of
// the per-token losses in float64 and the number of targets counted (0, 0 without
// targets). Call Reserve first.
func (m *Model) Forward(inputs, targets []int32, B, T int, train bool, dropKey uint64) (lossSum float64, count int) {
	a := m.a
	if a == nil || B > a.B || T > a.T || B*T > a.B*a.T {
		panic(fmt.Sprintf("train: forward of %dx%d tokens without Reserve", B, T))
	}
	if len(inputs) != B*T || (targets != nil && len(targets) != B*T) {
		panic(fmt.Sprintf("train: forward of %dx%d tokens with %d inputs and %d targets", B, T, len(inputs), len(targets)))
	}
	be, mc, p := m.be, m.Config, m.p
	C, NH, V, Vp, N := mc.NEmbd, mc.NHead, mc.VocabSize, mc.PaddedVocab, B*T
	for _, id := range inputs {
		if id < 0 || int(id) >= V {
			panic(fmt.Sprintf("train: token id %d outside the vocabulary [0,%d)", id, V))
		}
	}
	copy(a.inputs, inputs)
	a.curB, a.curT = B, T
	a.dropped = train && m.Dropout > 0 && a.encodedDrop != nil
	a.dropKey = dropKey
	pd := m.Dropout

	x := a.encoded[:N*C]
	be.EncoderForward(x, a.inputs[:N], p.wte, p.wpe, B, T, C)
	if a.dropped {
		be.DropoutForward(a.encodedDrop[:N*C], x, pd, dropSeed(dropKey, 0, siteEmbed))
		x = a.encodedDrop[:N*C]
	}
	for l, w := range p.layers {
		la := &a.layers[l]
		ln1, qkv, atty, attProj, res2 := la.ln1[:N*C], la.qkv[:N*3*C], la.atty[:N*C], la.attProj[:N*C], la.res2[:N*C]
		be.LayerNormForward(ln1, la.ln1Mean[:N], la.ln1Rstd[:N], x, w.ln1W, w.ln1B, N, C)
		be.MatmulForward(qkv, ln1, w.qkvW, w.qkvB, N, C, 3*C)
		be.AttentionForward(atty, la.att[:B*NH*T*T], qkv, B, T, C, NH)
		be.MatmulForward(attProj, atty, w.attnProjW, w.attnProjB, N, C, C)
		branch := attProj
		if a.dropped {
			branch = la.attProjDrop[:N*C]
			be.DropoutForward(branch, attProj, pd, dropSeed(dropKey, l, siteAttn))
		}
		be.ResidualForward(res2, x, branch)

		ln2, fch, fchGelu, fcProj, res3 := la.ln2[:N*C], la.fch[:N*4*C], la.fchGelu[:N*4*C], la.fcProj[:N*C], la.res3[:N*C]
		be.LayerNormForward(ln2, la.ln2Mean[:N], la.ln2Rstd[:N], res2, w.ln2W, w.ln2B, N, C)
		be.MatmulForward(fch, ln2, w.fcW, w.fcB, N, C, 4*C)
		be.GeluForward(fchGelu, fch)
		be.MatmulForward(fcProj, fchGelu, w.fcProjW, w.fcProjB, N, 4*C, C)
		branch = fcProj
		if a.dropped {
			branch = la.fcProjDrop[:N*C]
			be.DropoutForward(branch, fcProj, pd, dropSeed(dropKey, l, siteMLP))
		}
		be.ResidualForward(res3, res2, branch)
		x = res3
	}
	be.LayerNormForward(a.lnf[:N*C], a.lnfMean[:N], a.lnfRstd[:N], x, p.lnfW, p.lnfB, N, C)
	be.MatmulForward(a.logits[:N*Vp], a.lnf[:N*C], p.wte, nil, N, C, Vp)
	if targets == nil {
		be.Sync()
		return 0, 0
	}
	copy(a.targets, targets)
	be.CrossEntropyForward(a.losses[:N], a.probs[:N*Vp], a.logits[:N*Vp], a.targets[:N], N, V, Vp)
	be.Sync()
	for i, l := range a.losses[:N] {
		if targets[i] >= 0 {
			lossSum += float64(l)
			count++
		}
	}
	return lossSum, count
}

// Logits returns row i of the last forward pass's logits (the first V columns).
func (m *Model) Logits(i int) []float32 {
	Vp := m.Config.PaddedVocab
	return m.a.logits[i*Vp : i*Vp+m.Config.VocabSize]
}

// Backward accumulates into Grads the gradient of dloss·Σ(per-token losses) of the
// last Forward (which must have had targets): dloss is 1/(tokens in the global
// batch) for a mean. It clobbers the saved logits.
func (m *Model) Backward(dloss float32) {
	a := m.a
	if a == nil || !a.grads || m.Grads == nil {
		panic("train: backward without Reserve(..., true) and AllocGrads")
	}
	be, mc, p, g := m.be, m.Config, m.p, m.g
	B, T := a.curB, a.curT
	C, NH, V, Vp, N := mc.NEmbd, mc.NHead, mc.VocabSize, mc.PaddedVocab, B*T
	pd := m.Dropout

	dlogits := a.logits[:N*Vp] // the logits are not needed any more
	be.Zero(dlogits)
	be.CrossEntropyBackward(dlogits, a.probs[:N*Vp], a.targets[:N], dloss, N, V, Vp)
	dlnf := a.dbtc[:N*C]
	be.Zero(dlnf)
	be.MatmulBackward(dlnf, g.wte, nil, dlogits, a.lnf[:N*C], p.wte, N, C, Vp)

	dres := a.dres[:N*C] // the gradient of the residual stream, walking down
	be.Zero(dres)
	last := a.encoded[:N*C]
	if a.dropped {
		last = a.encodedDrop[:N*C]
	}
	if L := len(a.layers); L > 0 {
		last = a.layers[L-1].res3[:N*C]
	}
	be.LayerNormBackward(dres, g.lnfW, g.lnfB, dlnf, last, p.lnfW, a.lnfMean[:N], a.lnfRstd[:N], N, C)
	m.stageDone(len(a.layers))

	for l := len(a.layers) - 1; l >= 0; l-- {
		la, w, gw := &a.layers[l], p.layers[l], g.layers[l]
		x := a.encoded[:N*C] // this layer's input
		if a.dropped {
			x = a.encodedDrop[:N*C]
		}
		if l > 0 {
			x = a.layers[l-1].res3[:N*C]
		}
		// res3 = res2 + drop(fcProj): dres is the gradient of both res3 and (so far) res2.
		dbranch := dres
		if a.dropped {
			dbranch = a.ddrop[:N*C]
			be.Zero(dbranch)
			be.DropoutBackward(dbranch, dres, pd, dropSeed(a.dropKey, l, siteMLP))
		}
		dfchGelu, dfch := a.dfchGelu[:N*4*C], a.dfch[:N*4*C]
		be.Zero(dfchGelu)
		be.MatmulBackward(dfchGelu, gw.fcProjW, gw.fcProjB, dbranch, la.fchGelu[:N*4*C], w.fcProjW, N, 4*C, C)
		be.Zero(dfch)
		be.GeluBackward(dfch, la.fch[:N*4*C], dfchGelu)
		dln2 := a.dbtc[:N*C]
		be.Zero(dln2)
		be.MatmulBackward(dln2, gw.fcW, gw.fcB, dfch, la.ln2[:N*C], w.fcW, N, C, 4*C)
		be.LayerNormBackward(dres, gw.ln2W, gw.ln2B, dln2, la.res2[:N*C], w.ln2W, la.ln2Mean[:N], la.ln2Rstd[:N], N, C)

		// res2 = x + drop(attProj).
		dbranch = dres
		if a.dropped {
			dbranch = a.ddrop[:N*C]
			be.Zero(dbranch)
			be.DropoutBackward(dbranch, dres, pd, dropSeed(a.dropKey, l, siteAttn))
		}
		datty := a.dbtc[:N*C]
		be.Zero(datty)
		be.MatmulBackward(datty, gw.attnProjW, gw.attnProjB, dbranch, la.atty[:N*C], w.attnProjW, N, C, C)
		dqkv := a.dqkv[:N*3*C]
		be.Zero(dqkv)
		be.AttentionBackward(dqkv, datty, la.qkv[:N*3*C], la.att[:B*NH*T*T], B, T, C, NH)
		dln1 := a.dbtc[:N*C]
		be.Zero(dln1)
		be.MatmulBackward(dln1, gw.qkvW, gw.qkvB, dqkv, la.ln1[:N*C], w.qkvW, N, C, 3*C)
		be.LayerNormBackward(dres, gw.ln1W, gw.ln1B, dln1, x, w.ln1W, la.ln1Mean[:N], la.ln1Rstd[:N], N, C)
		m.stageDone(l)
	}
	denc := dres
	if a.dropped {
		denc = a.ddrop[:N*C]
		be.Zero(denc)
		be.DropoutBackward(denc, dres, pd, dropSeed(a.dropKey, 0, siteEmbed))
	}
	be.EncoderBackward(g.wte, g.wpe, denc, a.inputs[:N], B, T, C)
	m.stageDone(-1)
}

// stageDone hands a stage's final gradients to gradsDone (after the backend has
// finished writing them).
func (m *Model) stageDone(stage int) {
	if m.gradsDone != nil {
		m.be.Sync()
		m.gradsDone(stage)
	}
}
