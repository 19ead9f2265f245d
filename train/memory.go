package train

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"

	"gptkit/kernels"
)

// The memory a training run needs, estimated from the trainer's own buffers before any
// of them is allocated: a shape that cannot fit (--n-embd 1000000 asks for terabytes) is
// refused in one line instead of ending in the runtime's "out of memory" and a stack
// dump. The figures follow what NewTrainer allocates on each rank (the counts of
// MemoryUse, which the trainer logs once it has allocated them):
//
//   - parameters: float32 master weights, padded to whole blocks for the collectives
//     (newFlat), and under mixed precision their bfloat16 or float16 copy;
//   - gradients: float32, padded alike;
//   - AdamW: m and v for this rank's share (all of it, or 1/world under ZeRO-1; a
//     checkpoint's save and a resume pass them through one tensor's host buffer, no
//     whole copy: gatherMoment, streamMoments);
//   - activations: what Model.Reserve keeps for one micro-batch of batch_size x
//     block_size tokens with the backward's scratch, in the compute dtype but for
//     the LayerNorm statistics and attention's logsumexp (float32); the classifier
//     works on a chunk of rows (classifierRows), never all B·T rows of logits;
//   - the batch's token ids on the host;
//   - with several ranks, one chunk of the AdamW state (at most momentChunk floats
//     of one tensor) that a checkpoint's gather (ZeRO-1) or a resume's broadcast passes through
//     the collectives: on a GPU NCCL's device staging of it (kernels/cuda's
//     NCCL.collective), on the CPU the host scratch. Left out, a run sized to the
//     estimate trained to its first checkpoint and ended there, out of memory;
//   - scratch: the step's statistics (float64: the loss sum and the gradient
//     norm's partial sum of each block, Trainer.stats), and the largest scratch
//     one op takes for its duration (kernels/cuda's tmp): attention backward's
//     row sums, the column sums of the bias and LayerNorm weight gradients per
//     chunk of rows, the gradient norm's per-chunk partials, the embedding
//     backward's token buckets (opScratch). Left out, a run sized to the estimate
//     on a device passed the pre-flight and failed on its first step, out of
//     memory "allocating scratch". (cuBLASLt's 32 MiB workspace on a real GPU,
//     and the driver's size classes, are not counted: its free memory is
//     compared as it is.)
//
// Sums are taken in float64, so that no shape overflows them.

// MemoryEstimate is one rank's memory for a training run, in bytes.
type MemoryEstimate struct {
	Params      float64 // the weights (and their compute-dtype copy)
	Grads       float64 // their gradients
	Optimizer   float64 // AdamW's m and v (this rank's shard of them under ZeRO-1)
	Activations float64 // one micro-batch's saved activations and backward scratch
	Batch       float64 // token ids of the micro-batch on the host
	Staging     float64 // one chunk of the AdamW state through the collectives (several ranks)
	Scratch     float64 // the step's statistics and the largest per-op scratch

	// What the run is, for CheckMemory's hint: its ranks, zero, compute dtype.
	world, zero int
	dtype       kernels.DType
}

// Total is the sum of the parts.
func (e MemoryEstimate) Total() float64 {
	return e.Params + e.Grads + e.Optimizer + e.Activations + e.Batch + e.Staging + e.Scratch
}

// String is the total and its parts, for a log line or a message.
func (e MemoryEstimate) String() string {
	return e.withTotal(FormatBytes(e.Total()))
}

// withTotal is String with the total written as total.
func (e MemoryEstimate) withTotal(total string) string {
	staging := ""
	if e.Staging > 0 {
		staging = ", collectives' staging " + FormatBytes(e.Staging)
	}
	return fmt.Sprintf("%s (parameters %s, gradients %s, AdamW %s, activations %s%s)",
		total, FormatBytes(e.Params), FormatBytes(e.Grads), FormatBytes(e.Optimizer), FormatBytes(e.Activations+e.Batch+e.Scratch), staging)
}

// EstimateMemory is the memory one of world ranks needs to train cfg's model with a
// vocabulary of vocab ids (cfg.VocabSize when that is set), computing in dt.
func EstimateMemory(cfg Config, vocab, world int, dt kernels.DType) MemoryEstimate {
	if cfg.VocabSize > 0 {
		vocab = cfg.VocabSize
	}
	world = max(world, 1)
	mc := cfg.Model(vocab)
	params := paramCount(mc)
	padded, largest, block := params, params, float64(1<<22)
	if params < 1<<40 && mc.NLayer <= 1<<14 { // exactly, as NewTrainer lays it out
		tensors, _, total := mc.Layout()
		f := newFlat(total, world, 0, false)
		padded, block = float64(f.padded), float64(f.block)
		largest = 0
		for _, ti := range tensors {
			largest = max(largest, float64(ti.Size))
		}
	}
	const f32 = 4
	s := float64(dt.Size())
	e := MemoryEstimate{world: world, zero: cfg.Zero, dtype: dt}
	e.Params, e.Grads = f32*padded, f32*padded
	if dt != kernels.Float32 {
		e.Params += s * padded
	}
	shard := padded
	if cfg.Zero == 1 && world > 1 {
		shard = padded / float64(world)
	}
	e.Optimizer = 2 * f32 * shard
	if world > 1 { // a chunk of one tensor at a time
		e.Staging = f32 * min(largest, float64(momentChunk))
	}
	B, T, C, NH, L := float64(cfg.BatchSize), float64(cfg.BlockSize), float64(mc.NEmbd), float64(mc.NHead), float64(mc.NLayer)
	N, Vp := B*T, float64(mc.PaddedVocab)
	rows := float64(classifierRows(cfg.BatchSize*cfg.BlockSize, mc.PaddedVocab, dt))
	perLayer := s*16*N*C + f32*(4*N+B*NH*T) // Model.Reserve's layerActs
	back := s * 9 * N * C                   // dres, dbtc, dqkv, dfch
	if cfg.Dropout > 0 {
		back += s * N * C // ddrop
	}
	e.Activations = 4*2*N + // the token ids on the backend
		s*N*C + L*perLayer + // the embeddings, the blocks
		s*N*C + f32*2*N + f32*N + // the final LayerNorm, the losses
		s*rows*Vp + f32*Vp + s*N*C + back // the classifier's chunk, a logits row, scratch, the backward
	e.Batch = 4 * (B*(T+1) + 2*N + 2*N) // the batch, the trainer's inputs and targets, the model's ids
	e.Scratch = 8*(1+padded/block) + opScratch(N, B, T, C, NH, padded, block, mc.Bias)
	return e
}

// opScratch is the largest scratch one op of a training step takes on a device,
// in bytes, for a micro-batch of N = B·T tokens, width C, NH heads and padded
// parameters summed in blocks of block (kernels/cuda: tmp's callers; the
// constants are its rowsPerChunk and sumSquaresChunk).
func opScratch(N, B, T, C, NH, padded, block float64, bias bool) float64 {
	const rowsPerChunk, sumSquaresChunk = 256, 1 << 14
	chunks := math.Ceil(N / rowsPerChunk)
	s := max(
		4*B*NH*T,   // AttentionBackward: D, one float32 per row of each head
		4*(3*N+1),  // EncoderBackward: the tokens, their starts and positions
		8*chunks*C, // LayerNormBackward: the weight's and bias's partial sums
		8*(padded/block)*math.Ceil(block/sumSquaresChunk), // SumSquares: float64 partials per chunk of each block
	)
	if bias {
		s = max(s, 4*chunks*4*C) // MatmulBackward's bias sums (columnSums), widest for the MLP's 4C
	}
	return s
}

// paramCount is Layout's element count, in float64 (the 64-byte alignment of each
// tensor aside).
func paramCount(mc ModelConfig) float64 {
	C, L, T, Vp := float64(mc.NEmbd), float64(mc.NLayer), float64(mc.BlockSize), float64(mc.PaddedVocab)
	n := Vp*C + T*C + L*12*C*C + L*2*C + C
	if mc.Bias {
		n += L*9*C + C
	}
	return n
}

// DeviceMemory is implemented by backends that compute in a device's own memory and
// can say how much of it is free (kernels/cuda); host backends compute in the
// process's memory.
type DeviceMemory interface {
	DeviceMemory() (free, total int64)
}

// AvailableMemory is the memory a run on be can use, in bytes, and where the figure
// comes from: the device's free memory when be reports it, else MemAvailable from
// /proc/meminfo. ok is false where neither is known.
func AvailableMemory(be kernels.Backend) (bytes float64, source string, ok bool) {
	return availableMemory(be, be.Name())
}

// dtypeNamer is implemented by backends whose name depends on the dtype of the
// tensors allocated (kernels/cuda: the precision of its GEMMs): NameFor is the name
// a run in dt will have, before any of its tensors exists.
type dtypeNamer interface {
	NameFor(dt kernels.DType) string
}

// nameFor is be's name for a run in dt.
func nameFor(be kernels.Backend, dt kernels.DType) string {
	if n, ok := be.(dtypeNamer); ok {
		return n.NameFor(dt)
	}
	return be.Name()
}

// availableMemory is AvailableMemory with the device named name.
func availableMemory(be kernels.Backend, name string) (bytes float64, source string, ok bool) {
	if d, isDev := be.(DeviceMemory); isDev {
		free, _ := d.DeviceMemory()
		return float64(free), "free on the device (" + name + ")", true
	}
	if avail, err := memAvailable("/proc/meminfo"); err == nil {
		return float64(avail), "MemAvailable in /proc/meminfo", true
	}
	return 0, "", false
}

// memAvailable reads the MemAvailable line of a meminfo file, in bytes.
func memAvailable(path string) (int64, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := parseMemAvailable(data)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return n, nil
}

// parseMemAvailable finds "MemAvailable: N kB" in /proc/meminfo's text, in bytes.
func parseMemAvailable(data []byte) (int64, error) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := sc.Bytes()
		rest, ok := bytes.CutPrefix(line, []byte("MemAvailable:"))
		if !ok {
			continue
		}
		f := bytes.Fields(rest)
		if len(f) == 0 {
			break
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil || kb < 0 || kb > math.MaxInt64/1024 {
			break
		}
		return kb * 1024, nil
	}
	return 0, errors.New("no MemAvailable line")
}

// CheckMemory refuses a run whose rank needs more memory (est) than be has available:
// one line with both figures, written precisely enough to differ, and a hint with
// what applies to the run: a smaller model or micro-batch; zero 1 where several ranks
// each hold all of AdamW's state; dtype bfloat16 where a device computes in float32
// (as the out-of-memory error of an allocation says: Trainer.memoryError). (Ranks
// that share a host each check their own need: the same-host ranks share some
// buffers, so the sum would overstate it.)
func CheckMemory(est MemoryEstimate, be kernels.Backend) error {
	// The device as the run will use it: before the model's tensors exist, a
	// bfloat16 run on cuda-sim was "fp32 matmuls" (the precision of the float32
	// tensors allocated so far, none).
	avail, source, ok := availableMemory(be, nameFor(be, est.dtype))
	if !ok || est.Total() <= avail {
		return nil
	}
	need, have := distinctBytes(est.Total(), avail)
	hint := "make the model smaller (--n-embd, --n-layer) or the micro-batch (--batch-size, --block-size; --grad-accum keeps the tokens per step)"
	if est.world > 1 && est.zero == 0 {
		hint += fmt.Sprintf(", or --zero 1 (shards AdamW's state over the %d ranks)", est.world)
	}
	if _, host := be.(kernels.HostMemory); !host && est.dtype == kernels.Float32 {
		hint += ", or --dtype bfloat16 (half the activations)"
	}
	return fmt.Errorf("train: the model and its training state need %s, more than the %s available (%s)\n---> HINT: %s",
		est.withTotal(need), have, source, hint)
}

// distinctBytes writes need and avail (need > avail) as FormatBytes does, with as
// many decimals as it takes to tell them apart ("14.3 MiB" and "14.3 MiB" said
// nothing), up to three, else as whole bytes.
func distinctBytes(need, avail float64) (string, string) {
	for prec := 1; prec <= 3; prec++ {
		n, a := formatBytes(need, prec), formatBytes(avail, prec)
		if n != a {
			return n, a
		}
	}
	return fmt.Sprintf("%.0f bytes", need), fmt.Sprintf("%.0f bytes", avail)
}

// FormatBytes writes a byte count with a binary unit: "512 B", "1.5 GiB", "44.0 TiB".
func FormatBytes(b float64) string {
	return formatBytes(b, 1)
}

// formatBytes is FormatBytes with prec decimals (none for bytes).
func formatBytes(b float64, prec int) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	u := 0
	for b >= 1024 && u < len(units)-1 {
		b /= 1024
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%.0f B", b)
	}
	return fmt.Sprintf("%.*f %s", prec, b, units[u])
}
