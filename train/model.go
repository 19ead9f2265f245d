package train

import (
	"fmt"
	"hash/crc32"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"

	"gptkit/kernels"
)

// Model is a GPT-2 (nanoGPT's GPT) over a kernels.Backend: float32 master
// parameters in one flat buffer with named views, float32 gradients mirroring
// it, a copy of the weights in the compute dtype (mixed precision), and the
// activations of one micro-batch shape.
//
// The step is llm.c's: the residual add is fused with the LayerNorm after it,
// the bias and GELU with the fc matmul, the backward of the GELU with the next
// matmul's input gradient, attention saves only its logsumexp, and the language
// model head is fused with the loss and its gradient (Classifier), so the
// backward of the head runs during the forward of a training step and no
// (tokens × vocab) buffer exists. Outputs are written, not accumulated, except
// the weight gradients, which accumulate over the micro-batches of a step.
type Model struct {
	Config ModelConfig
	// Dropout is the dropout probability of a training forward pass.
	Dropout float32

	be       kernels.Backend
	dtype    kernels.DType                             // the compute dtype: activations and the weights the forward reads
	alloc    func(string, int) (kernels.Tensor, error) // Params' and Grads' memory (float32): be.Alloc, or shared memory
	Tensors  []TensorInfo                              // the layout of Params (and Grads)
	DecayLen int                                       // Params[:DecayLen] get weight decay, Params[DecayLen:] not
	// Params are the float32 master weights (the layout's length; paramsAll adds
	// the padding); Grads the float32 gradients (none until AllocGrads).
	Params, Grads kernels.Tensor
	// paramsAll and gradsAll are Params and Grads with the padding the
	// collectives of data parallelism need (whole blocks, equal shards); the
	// padding stays zero.
	paramsAll, gradsAll kernels.Tensor
	// work is the weights the forward reads: Params itself in float32, else a
	// copy in the compute dtype that AdamW (or SyncWork) keeps current; workAll
	// is it padded like paramsAll.
	work, workAll kernels.Tensor
	padded        int
	// gradsDone, if set, is called by Step's backward when a stage's gradients are
	// final (gradient buckets): stage NLayer after the final LayerNorm, l after
	// block l, -1 after the embeddings.
	gradsDone func(stage int)

	p, g    weights // views of work and Grads
	a       *activations
	lossAcc kernels.Tensor // Float64[1]: Σ losses of the forwards since ResetLoss
	mem     MemoryUse
	owned   []kernels.Tensor // what Close frees
}

// NewModel allocates a zeroed float32 model of shape mc on be (call Init or load
// weights).
func NewModel(be kernels.Backend, mc ModelConfig) (*Model, error) {
	return newModel(be, mc, kernels.Float32, 0, nil)
}

// NewModelDType is NewModel computing in dtype dt (float32 master weights, a dt
// copy for the forward and backward, dt activations).
func NewModelDType(be kernels.Backend, mc ModelConfig, dt kernels.DType) (*Model, error) {
	return newModel(be, mc, dt, 0, nil)
}

// newModel is NewModelDType with Params (and Grads) allocated padded floats long
// by alloc (nil: be.Alloc) and viewed at the layout's length (padded <= the
// length: none).
func newModel(be kernels.Backend, mc ModelConfig, dt kernels.DType, padded int, alloc func(string, int) (kernels.Tensor, error)) (*Model, error) {
	if err := mc.Validate(); err != nil {
		return nil, err
	}
	if !dt.Floating() {
		return nil, fmt.Errorf("train: compute dtype %s: want float32, bfloat16 or float16", dt)
	}
	tensors, decayLen, total := mc.Layout()
	padded = max(padded, total)
	m := &Model{Config: mc, be: be, dtype: dt, Tensors: tensors, DecayLen: decayLen, padded: padded}
	if alloc == nil {
		alloc = func(what string, n int) (kernels.Tensor, error) {
			t, err := be.Alloc(what, kernels.Float32, n)
			if err == nil {
				m.owned = append(m.owned, t)
			}
			return t, err
		}
	}
	m.alloc = alloc
	var err error
	if m.paramsAll, err = alloc("weights (float32)", padded); err != nil {
		return nil, err
	}
	m.mem.Params += int64(padded) * 4
	m.Params = m.paramsAll.Slice(0, total)
	m.work, m.workAll = m.Params, m.paramsAll
	if dt != kernels.Float32 {
		if m.workAll, err = m.allocT("weights ("+dt.String()+" copy)", dt, padded, &m.mem.Params); err != nil {
			m.Close()
			return nil, err
		}
		m.work = m.workAll.Slice(0, total)
	}
	if m.lossAcc, err = m.allocT("loss sum", kernels.Float64, 1, &m.mem.Activations); err != nil {
		m.Close()
		return nil, err
	}
	m.p = views(mc, tensors, m.work)
	return m, nil
}

// allocT allocates n elements of dt on the backend for the model, counting the
// bytes into *account; Close frees it.
func (m *Model) allocT(what string, dt kernels.DType, n int, account *int64) (kernels.Tensor, error) {
	t, err := m.be.Alloc(what, dt, n)
	if err != nil {
		return kernels.Tensor{}, err
	}
	m.owned = append(m.owned, t)
	*account += int64(t.Bytes())
	return t, nil
}

// free frees t (one of allocT's), counting its bytes out of *account.
func (m *Model) free(t kernels.Tensor, account *int64) {
	for i, o := range m.owned {
		if o == t {
			m.owned = append(m.owned[:i], m.owned[i+1:]...)
			break
		}
	}
	m.be.Free(t)
	*account -= int64(t.Bytes())
}

// Work is the compute-dtype copy of the weights AdamW keeps current (none when
// the model computes in float32: the forward reads Params).
func (m *Model) Work() kernels.Tensor {
	if m.work.Same(m.Params) {
		return kernels.Tensor{}
	}
	return m.work
}

// DType is the compute dtype.
func (m *Model) DType() kernels.DType { return m.dtype }

// Backend is the backend the model runs on.
func (m *Model) Backend() kernels.Backend { return m.be }

// Close frees the model's device memory (the model is unusable afterwards).
func (m *Model) Close() {
	for _, t := range m.owned {
		m.be.Free(t)
	}
	m.owned = nil
	m.a = nil
}

// AllocGrads allocates the gradient buffer (training needs it; sampling does not).
func (m *Model) AllocGrads() error {
	if m.Grads.Nil() {
		g, err := m.alloc("gradients (float32)", m.padded)
		if err != nil {
			return err
		}
		m.mem.Grads += int64(m.padded) * 4
		m.gradsAll = g
		m.Grads = g.Slice(0, m.Params.Len())
		m.g = views(m.Config, m.Tensors, m.Grads)
	}
	return nil
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

// ReadParams returns the float32 master weights in host memory: a view of them
// on a host backend, else a copy downloaded from the device.
func (m *Model) ReadParams() []float32 { return readHost(m.be, m.Params) }

// readHost returns a Float32 tensor's values in host memory: its own memory when
// the host can address it, else a downloaded copy.
func readHost(be kernels.Backend, t kernels.Tensor) []float32 {
	if t.IsHost() {
		return t.Float32s()
	}
	out := make([]float32, t.Len())
	be.Download(kernels.Float32Bytes(out), t)
	return out
}

// paramsCRC is the CRC-32C of the master weights' bytes, laid out like Params (of
// ReadParams' values), read from a device in chunks of crcChunk floats into one host
// buffer: checkWeights runs every few steps and before each save, and a copy of all
// the weights was 4 bytes a parameter of host memory each time (6 GB at 1.5B).
func (m *Model) paramsCRC() uint32 {
	table := crc32.MakeTable(crc32.Castagnoli)
	if m.Params.IsHost() {
		return crc32.Checksum(kernels.Float32Bytes(m.Params.Float32s()), table)
	}
	n := m.Params.Len()
	buf := make([]float32, min(n, crcChunk))
	var sum uint32
	for off := 0; off < n; off += len(buf) {
		part := buf[:min(len(buf), n-off)]
		m.be.Download(kernels.Float32Bytes(part), m.Params.Slice(off, off+len(part)))
		sum = crc32.Update(sum, table, kernels.Float32Bytes(part))
	}
	return sum
}

// crcChunk is how many floats of the weights paramsCRC reads from a device at a time
// (4 MB; a variable: tests make it smaller).
var crcChunk = 1 << 20

// SetParams sets the master weights from host values laid out like Params (a
// copy of ReadParams, edited) and refreshes the compute copy.
func (m *Model) SetParams(host []float32) {
	if len(host) != m.Params.Len() {
		panic(fmt.Sprintf("train: SetParams with %d values for %d parameters", len(host), m.Params.Len()))
	}
	if m.Params.IsHost() {
		if &host[0] != &m.Params.Float32s()[0] {
			copy(m.Params.Float32s(), host)
		}
	} else {
		m.be.Upload(m.Params, kernels.Float32Bytes(host))
	}
	m.SyncWork()
}

// SyncWork refreshes the compute copy of the weights from the master weights
// (after they changed other than through AdamW's copy).
func (m *Model) SyncWork() {
	if !m.workAll.Same(m.paramsAll) {
		m.be.Convert(m.workAll, m.paramsAll)
	}
}

// Init sets the weights as nanoGPT's GPT does: Linear and Embedding weights from
// N(0, 0.02), the residual projections (attn.c_proj and mlp.c_proj weights) from
// N(0, 0.02/sqrt(2·n_layer)), biases 0, LayerNorm weights 1. Each tensor draws from
// its own PCG stream keyed by (seed, its name), so the values do not depend on the
// layout. The values are made on the host and uploaded in order with the
// backend's ops (never written behind an asynchronous device memset).
func (m *Model) Init(seed uint64) {
	host := make([]float32, m.Params.Len())
	resid := 0.02 / math.Sqrt(2*float64(m.Config.NLayer))
	for _, t := range m.Tensors {
		v := host[t.Offset : t.Offset+t.Size]
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
	m.SetParams(host)
}

// activations are the saved forward values of one micro-batch of at most B x T
// tokens, and the backward's scratch buffers.
type activations struct {
	B, T  int  // capacity
	grads bool // the backward buffers exist

	ids                   kernels.Tensor // Int32 (2·B·T): the inputs, then the targets
	hostIDs               []int32        // their host staging
	encoded               kernels.Tensor // (B,T,C), dropout applied in place
	layers                []layerActs
	lnf, lnfMean, lnfRstd kernels.Tensor
	losses                kernels.Tensor // (B·T) float32
	logits                kernels.Tensor // the classifier's chunk of rows × Vp
	logitRow              kernels.Tensor // (Vp) float32, for sampling
	scratch               kernels.Tensor // (B,T,C): the projections' outputs before the residual

	// Backward scratch.
	dres, dbtc, ddrop, dqkv, dfch kernels.Tensor

	all []kernels.Tensor // every tensor above, for freeActivations

	// The last forward pass's shape and dropout.
	curB, curT int
	dropped    bool
	dropKey    uint64
}

// layerActs are what one block saves for the backward: its LayerNorms' inputs
// are the previous block's res3 (or the embeddings) and its own res2.
type layerActs struct {
	ln1, ln1Mean, ln1Rstd, qkv, atty, lse, res2 kernels.Tensor
	ln2, ln2Mean, ln2Rstd, fch, fchGelu, res3   kernels.Tensor
}

// classifierChunkBytes bounds the classifier's logits scratch: rows of Vp logits
// up to this many bytes (every row when they fit). The chunk boundaries fix the
// order the embedding's gradient is summed in, so they depend on the shape only.
const classifierChunkBytes = 256 << 20

// classifierRows is the rows of the classifier's chunk for N rows of Vp logits.
func classifierRows(N, Vp int, dt kernels.DType) int {
	return max(1, min(N, classifierChunkBytes/(Vp*dt.Size())))
}

// Reserve allocates the activations for micro-batches of up to B x T tokens (T at
// most block_size), with the backward's buffers when grads is true. Smaller
// batches reuse them.
func (m *Model) Reserve(B, T int, grads bool) error {
	if a := m.a; a != nil && a.B >= B && a.T >= T && (a.grads || !grads) {
		return nil
	}
	if T > m.Config.BlockSize {
		panic(fmt.Sprintf("train: T %d > block_size %d", T, m.Config.BlockSize))
	}
	if m.a != nil {
		m.freeActivations()
	}
	mc := m.Config
	C, NH, Vp, N := mc.NEmbd, mc.NHead, mc.PaddedVocab, B*T
	dt := m.dtype
	var err error
	var acts []kernels.Tensor
	al := func(what string, t kernels.DType, n int) kernels.Tensor {
		if err != nil {
			return kernels.Tensor{}
		}
		var x kernels.Tensor
		x, err = m.allocT(what, t, n, &m.mem.Activations)
		acts = append(acts, x)
		return x
	}
	f32 := kernels.Float32
	a := &activations{B: B, T: T, grads: grads}
	a.ids = al("token ids", kernels.Int32, 2*N)
	a.hostIDs = make([]int32, 2*N)
	a.encoded = al("activations (embeddings)", dt, N*C)
	for l := range mc.NLayer {
		what := fmt.Sprintf("activations (block %d)", l)
		a.layers = append(a.layers, layerActs{
			ln1: al(what, dt, N*C), ln1Mean: al(what, f32, N), ln1Rstd: al(what, f32, N),
			qkv: al(what, dt, N*3*C), atty: al(what, dt, N*C), lse: al(what, f32, B*NH*T), res2: al(what, dt, N*C),
			ln2: al(what, dt, N*C), ln2Mean: al(what, f32, N), ln2Rstd: al(what, f32, N),
			fch: al(what, dt, N*4*C), fchGelu: al(what, dt, N*4*C), res3: al(what, dt, N*C),
		})
	}
	a.lnf, a.lnfMean, a.lnfRstd = al("activations (final layernorm)", dt, N*C), al("activations", f32, N), al("activations", f32, N)
	a.losses = al("losses", f32, N)
	a.logits = al("classifier chunk", dt, classifierRows(N, Vp, dt)*Vp)
	a.logitRow = al("logits", f32, Vp)
	a.scratch = al("activations (scratch)", dt, N*C)
	if grads {
		a.dres, a.dbtc, a.dqkv = al("activation gradients", dt, N*C), al("activation gradients", dt, N*C), al("activation gradients", dt, N*3*C)
		a.dfch = al("activation gradients", dt, N*4*C)
		if m.Dropout > 0 {
			a.ddrop = al("activation gradients", dt, N*C)
		}
	}
	a.all = acts
	if err != nil {
		m.a = a
		m.freeActivations()
		return err
	}
	m.a = a
	return nil
}

// freeActivations frees the activations Reserve allocated.
func (m *Model) freeActivations() {
	for _, t := range m.a.all {
		if !t.Nil() {
			m.free(t, &m.mem.Activations)
		}
	}
	m.a = nil
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

// Forward runs the model on inputs (B*T token ids, row-major) without dropout
// and, when targets is not nil, the cross-entropy against them (a target < 0 is
// ignored), adding the per-token losses' sum into the loss accumulator
// (LossSum). It returns the number of targets counted (0 without targets). Call
// Reserve first.
func (m *Model) Forward(inputs, targets []int32, B, T int) int {
	return m.forward(inputs, targets, B, T, 0, false, 0)
}

// Step runs one training micro-batch: the forward with dropout keyed by dropKey,
// the loss into the loss accumulator, and the backward, adding into Grads the
// gradient of dloss·Σ(per-token losses) (dloss is 1/(tokens in the global
// batch) for a mean, times the loss scale under float16). It returns the number
// of targets counted. Call Reserve(..., true) and AllocGrads first.
func (m *Model) Step(inputs, targets []int32, B, T int, dloss float32, dropKey uint64) int {
	a := m.a
	if a == nil || !a.grads || m.Grads.Nil() {
		panic("train: step without Reserve(..., true) and AllocGrads")
	}
	if targets == nil {
		panic("train: step without targets")
	}
	n := m.forward(inputs, targets, B, T, dloss, true, dropKey)
	m.backward()
	return n
}

func (m *Model) forward(inputs, targets []int32, B, T int, dloss float32, train bool, dropKey uint64) (count int) {
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
	// One upload for the inputs and the targets.
	ids := a.hostIDs[:2*N]
	copy(ids, inputs)
	if targets != nil {
		copy(ids[N:], targets)
		for _, t := range targets {
			if t >= 0 {
				count++
			}
		}
	}
	be.Upload(a.ids.Slice(0, 2*N), kernels.Int32Bytes(ids))
	in, tg := a.ids.Slice(0, N), a.ids.Slice(N, 2*N)
	a.curB, a.curT = B, T
	a.dropped = train && m.Dropout > 0 && !a.ddrop.Nil()
	a.dropKey = dropKey
	pd := m.Dropout
	none := kernels.Tensor{}

	x := a.encoded.Slice(0, N*C)
	be.EncoderForward(x, in, p.wte, p.wpe, B, T, C)
	if a.dropped {
		be.DropoutForward(x, x, pd, dropSeed(dropKey, 0, siteEmbed))
	}
	l0 := &a.layers[0]
	be.LayerNormForward(l0.ln1.Slice(0, N*C), l0.ln1Mean.Slice(0, N), l0.ln1Rstd.Slice(0, N), x, p.layers[0].ln1W, p.layers[0].ln1B, N, C)
	branch := a.scratch.Slice(0, N*C)
	for l, w := range p.layers {
		la := &a.layers[l]
		ln1, qkv, atty, res2 := la.ln1.Slice(0, N*C), la.qkv.Slice(0, N*3*C), la.atty.Slice(0, N*C), la.res2.Slice(0, N*C)
		be.MatmulForward(qkv, ln1, w.qkvW, w.qkvB, N, C, 3*C)
		be.AttentionForward(atty, la.lse.Slice(0, B*NH*T), qkv, B, T, C, NH)
		be.MatmulForward(branch, atty, w.attnProjW, w.attnProjB, N, C, C)
		if a.dropped {
			be.DropoutForward(branch, branch, pd, dropSeed(dropKey, l, siteAttn))
		}
		ln2 := la.ln2.Slice(0, N*C)
		be.ResidualLayerNormForward(res2, ln2, la.ln2Mean.Slice(0, N), la.ln2Rstd.Slice(0, N), x, branch, w.ln2W, w.ln2B, N, C)

		fch, fchGelu, res3 := la.fch.Slice(0, N*4*C), la.fchGelu.Slice(0, N*4*C), la.res3.Slice(0, N*C)
		be.MatmulGeluForward(fchGelu, fch, ln2, w.fcW, w.fcB, N, C, 4*C)
		be.MatmulForward(branch, fchGelu, w.fcProjW, w.fcProjB, N, 4*C, C)
		if a.dropped {
			be.DropoutForward(branch, branch, pd, dropSeed(dropKey, l, siteMLP))
		}
		// The residual add with the next LayerNorm: the next block's ln_1, or ln_f.
		lnOut, lnMean, lnRstd, lnW, lnB := a.lnf, a.lnfMean, a.lnfRstd, p.lnfW, p.lnfB
		if l+1 < len(p.layers) {
			nx := &a.layers[l+1]
			lnOut, lnMean, lnRstd, lnW, lnB = nx.ln1, nx.ln1Mean, nx.ln1Rstd, p.layers[l+1].ln1W, p.layers[l+1].ln1B
		}
		be.ResidualLayerNormForward(res3, lnOut.Slice(0, N*C), lnMean.Slice(0, N), lnRstd.Slice(0, N), res2, branch, lnW, lnB, N, C)
		x = res3
	}
	if targets == nil {
		return 0
	}
	if train {
		be.Classifier(a.losses.Slice(0, N), m.lossAcc, a.dbtc.Slice(0, N*C), m.g.wte, a.logits, a.lnf.Slice(0, N*C), p.wte, tg, dloss, N, C, V, Vp)
	} else {
		be.Classifier(a.losses.Slice(0, N), m.lossAcc, none, none, a.logits, a.lnf.Slice(0, N*C), p.wte, tg, 0, N, C, V, Vp)
	}
	return count
}

// ResetLoss zeroes the loss accumulator.
func (m *Model) ResetLoss() { m.be.Zero(m.lossAcc) }

// LossSum downloads the loss accumulator: Σ of the per-token losses of the
// forwards since ResetLoss, in float64.
func (m *Model) LossSum() float64 {
	var s [1]float64
	m.be.Download(kernels.Float64Bytes(s[:]), m.lossAcc)
	return s[0]
}

// Logits returns row i of the last forward pass's logits (the first V columns),
// computed on demand (sampling needs one row, never the (B·T, Vp) matrix).
func (m *Model) Logits(i int) []float32 {
	C, Vp := m.Config.NEmbd, m.Config.PaddedVocab
	a := m.a
	m.be.MatmulForward(a.logitRow, a.lnf.Slice(i*C, (i+1)*C), m.p.wte, kernels.Tensor{}, 1, C, Vp)
	row := make([]float32, Vp)
	m.be.Download(kernels.Float32Bytes(row), a.logitRow)
	return row[:m.Config.VocabSize]
}

// backward adds into Grads the gradient of the last training forward; the
// classifier's part (dwte's head share and dlnf in dbtc) was done by it.
func (m *Model) backward() {
	a := m.a
	be, mc, p, g := m.be, m.Config, m.p, m.g
	B, T := a.curB, a.curT
	C, NH, N := mc.NEmbd, mc.NHead, B*T
	pd := m.Dropout
	none := kernels.Tensor{}

	dres := a.dres.Slice(0, N*C) // the gradient of the residual stream, walking down
	dbtc := a.dbtc.Slice(0, N*C)
	last := a.layers[len(a.layers)-1].res3.Slice(0, N*C)
	be.LayerNormBackward(dres, g.lnfW, g.lnfB, none, dbtc, last, p.lnfW, a.lnfMean.Slice(0, N), a.lnfRstd.Slice(0, N), N, C)
	m.stageDone(len(a.layers))

	for l := len(a.layers) - 1; l >= 0; l-- {
		la, w, gw := &a.layers[l], p.layers[l], g.layers[l]
		x := a.encoded.Slice(0, N*C) // this block's input
		if l > 0 {
			x = a.layers[l-1].res3.Slice(0, N*C)
		}
		// res3 = res2 + drop(fcProj): dres is the gradient of both res3 and (so far) res2.
		dbranch := dres
		if a.dropped {
			dbranch = a.ddrop.Slice(0, N*C)
			be.DropoutBackward(dbranch, dres, pd, dropSeed(a.dropKey, l, siteMLP))
		}
		dfch := a.dfch.Slice(0, N*4*C)
		be.MatmulBackward(dfch, gw.fcProjW, gw.fcProjB, dbranch, la.fchGelu.Slice(0, N*4*C), w.fcProjW, la.fch.Slice(0, N*4*C), N, 4*C, C)
		be.MatmulBackward(dbtc, gw.fcW, gw.fcB, dfch, la.ln2.Slice(0, N*C), w.fcW, none, N, C, 4*C)
		be.LayerNormBackward(dres, gw.ln2W, gw.ln2B, dres, dbtc, la.res2.Slice(0, N*C), w.ln2W, la.ln2Mean.Slice(0, N), la.ln2Rstd.Slice(0, N), N, C)

		// res2 = x + drop(attProj).
		dbranch = dres
		if a.dropped {
			dbranch = a.ddrop.Slice(0, N*C)
			be.DropoutBackward(dbranch, dres, pd, dropSeed(a.dropKey, l, siteAttn))
		}
		be.MatmulBackward(dbtc, gw.attnProjW, gw.attnProjB, dbranch, la.atty.Slice(0, N*C), w.attnProjW, none, N, C, C)
		dqkv := a.dqkv.Slice(0, N*3*C)
		be.AttentionBackward(dqkv, dbtc, la.qkv.Slice(0, N*3*C), la.atty.Slice(0, N*C), la.lse.Slice(0, B*NH*T), B, T, C, NH)
		be.MatmulBackward(dbtc, gw.qkvW, gw.qkvB, dqkv, la.ln1.Slice(0, N*C), w.qkvW, none, N, C, 3*C)
		be.LayerNormBackward(dres, gw.ln1W, gw.ln1B, dres, dbtc, x, w.ln1W, la.ln1Mean.Slice(0, N), la.ln1Rstd.Slice(0, N), N, C)
		m.stageDone(l)
	}
	denc := dres
	if a.dropped {
		denc = a.ddrop.Slice(0, N*C)
		be.DropoutBackward(denc, dres, pd, dropSeed(a.dropKey, 0, siteEmbed))
	}
	be.EncoderBackward(g.wte, g.wpe, denc, a.ids.Slice(0, N), B, T, C)
	m.stageDone(-1)
}

// stageDone hands a stage's final gradients to gradsDone: queued on the
// backend, not necessarily written yet (a bucket on the host syncs first; one
// on a communication stream waits for an event).
func (m *Model) stageDone(stage int) {
	if m.gradsDone != nil {
		m.gradsDone(stage)
	}
}
