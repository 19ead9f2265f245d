package train

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"gptkit/kernels"
	"gptkit/train/safetensors"
)

// flat is the geometry of the flat buffers (weights, gradients, AdamW moments)
// under data parallelism. They are padded with zeros to whole norm blocks and to
// World equal shards, so that the gradient norm is summed block by block in the
// same order whatever the world size and sharding, and so that ZeRO-1's
// reduce-scatter and all-gather work on equal parts.
type flat struct {
	n      int // the layout's length: len(Params)
	block  int // the gradient norm's block, and ZeRO-1's shard unit
	padded int // n rounded up to a multiple of block·world
	lo, hi int // this rank's slice of the AdamW state: its shard (ZeRO-1) or [0, padded)
}

// normBlock is the gradient norm's block for a buffer of n floats: the power of
// two at or above n/128, in [256, 4M] (about 128 blocks: few calls of the
// backend's SumSquares, and shards for up to 128 ranks). It depends on n alone, so
// the norm's bits do not depend on the world size.
func normBlock(n int) int {
	b := 256
	for b < 1<<22 && b*128 < n {
		b *= 2
	}
	return b
}

func newFlat(n, world, rank int, zero bool) flat {
	block := normBlock(n)
	blocks := (n + block - 1) / block
	perRank := (blocks + world - 1) / world
	f := flat{n: n, block: block, padded: perRank * world * block}
	f.hi = f.padded
	if zero {
		f.lo, f.hi = rank*perRank*block, (rank+1)*perRank*block
	}
	return f
}

// gradNorm writes the gradient norm's partial sums into stats[1:], one per
// block, with the backend's SumSquares; the blocks are added in order by AdamW
// and by the step's report. With ZeRO-1 each rank sums the blocks of its shard
// and the partial sums are all-gathered (exactly, as float64 bits), which gives
// the same bits.
func (t *Trainer) gradNorm(ctx context.Context) error {
	f := t.flat
	parts := t.stats.Slice(1, t.stats.Len())
	if !t.zero() {
		t.be.SumSquares(parts, t.model.gradsAll, f.block)
		return nil
	}
	own := parts.Slice(f.lo/f.block, f.hi/f.block)
	t.be.SumSquares(own, t.model.gradsAll.Slice(f.lo, f.hi), f.block)
	mine := make([]float64, own.Len())
	t.be.Download(kernels.Float64Bytes(mine), own)
	all, err := t.gather(ctx, mine...)
	if err != nil {
		return err
	}
	t.be.Upload(parts, kernels.Float64Bytes(all))
	return nil
}

// zero reports whether the AdamW state is sharded (ZeRO-1 over several ranks).
func (t *Trainer) zero() bool { return t.cfg.Zero == 1 && t.coll.World() > 1 }

// resumeMoments is where a resume's AdamW state is: placed, read straight into the
// trainer's own by restore (one rank), or else in the optimizer file of the
// checkpoint cd, which rank 0 reads and broadcasts (shareStart, streamMoments)
// against the checkpoint.json restore read.
type resumeMoments struct {
	placed bool
	cd     *ckptDir
}

// momentChunk is how many floats one collective carries when the AdamW state is
// gathered for a checkpoint (gatherMoment) or broadcast at a resume
// (streamMoments): the staging buffers are bounded by it, so no rank ever holds
// the whole state in host memory, and rank 0 one tensor of it at a time. (A
// variable: the tests make it small, to cut tensors at chunks and shards.)
var momentChunk = 1 << 20

// momentLayouts are the tensors of the optimizer file: exp_avg.NAME for each
// tensor of the layout, then exp_avg_sq.NAME (index i: moment i/len(Tensors),
// tensor i%len(Tensors)); order is the file's order of them, sorted by name, as
// safetensors lays them out: the order in which every rank gathers them.
func (m *Model) momentLayouts() (layouts []safetensors.Layout, order []int) {
	layouts = append(m.layouts("exp_avg."), m.layouts("exp_avg_sq.")...)
	order = make([]int, len(layouts))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(layouts[a].Name, layouts[b].Name) })
	return layouts, order
}

// gatherMoment puts tensor i of momentLayouts, of the AdamW state, into dst on
// rank 0 (dst nil: nowhere), for a checkpoint. Without ZeRO-1 rank 0 holds the
// whole state and copies (or downloads) just that tensor, and the others do
// nothing. Under ZeRO-1 every rank calls it, for the same tensors in the same
// order: the tensor's parts in the other ranks' shards come to rank 0 through
// broadcasts, from each part's owner, of at most momentChunk floats.
func (t *Trainer) gatherMoment(ctx context.Context, i int, dst []float32) error {
	N := len(t.model.Tensors)
	ti := t.model.Tensors[i%N]
	shard := t.m
	if i >= N {
		shard = t.v
	}
	copyOut := func(off int, out []float32) {
		if shard.IsHost() {
			copy(out, shard.Float32s()[off:off+len(out)])
		} else {
			t.be.Download(kernels.Float32Bytes(out), shard.Slice(off, off+len(out)))
		}
	}
	rank := t.coll.Rank()
	if !t.zero() {
		if rank == 0 && dst != nil {
			copyOut(ti.Offset, dst)
		}
		return nil
	}
	S := t.flat.hi - t.flat.lo // every rank's shard: rank q's is [q·S, (q+1)·S)
	k := min(S, momentChunk)
	stage := t.scratch(k)
	for c, end := ti.Offset, ti.Offset+ti.Size; c < end; {
		q := c / S
		e := min(end, (q+1)*S, c+k)
		switch {
		case q == 0 && rank == 0 && dst != nil:
			copyOut(c, dst[c-ti.Offset:e-ti.Offset])
		case q == 0: // rank 0's own
		default:
			buf := stage[:e-c]
			if rank == q {
				copyOut(c-q*S, buf)
			}
			if err := t.coll.Broadcast(ctx, buf, q); err != nil {
				return err
			}
			if rank == 0 && dst != nil {
				copy(dst[c-ti.Offset:e-ti.Offset], buf)
			}
		}
		c = e
	}
	return nil
}

// What a message of streamMoments says (its header's first value).
const (
	momData  = 1 + iota // n floats of moment which (0: exp_avg, 1: exp_avg_sq) at offset off follow
	momDone             // the state is complete, the file's sha256 checked
	momAgain            // the file is damaged: rank 0 continues from an older checkpoint, whose start (header, weights, state) follows
)

// streamMoments puts the AdamW state of a resume into every rank's own part (t.m
// and t.v: all of them, or its ZeRO-1 shard). Rank 0 reads the optimizer file of
// the checkpoint moments.cd tensor by tensor (readInto: one tensor in host
// memory at a time), and broadcasts each in chunks of momentChunk floats, each
// behind a header that says where it goes; the others (moments nil) take the
// parts of their own. The file's sha256 is checked at its end: when it does not
// match and the run falls back to an older checkpoint (fallBack), rank 0 restores
// that one and again is true on every rank: the start is shared again. When rank
// 0 cannot read the state it returns its error, and the others learn it as they
// learn any rank's failure: the collectives' abort, which carries it (so that what
// the job reports is rank 0's error, naming the file).
func (t *Trainer) streamMoments(ctx context.Context, moments *resumeMoments) (again bool, err error) {
	hdr := t.scratch(8)
	k := min(t.flat.padded, momentChunk)
	stage := t.scratch(k)
	place := func(which, off int, vals []float32) {
		shard := t.m
		if which == 1 {
			shard = t.v
		}
		lo, hi := t.flat.lo, t.flat.hi
		if a, b := max(off, lo), min(off+len(vals), hi); a < b {
			t.be.Upload(shard.Slice(a-lo, b-lo), kernels.Float32Bytes(vals[a-off:b-off]))
		}
	}
	if t.coll.Rank() != 0 {
		for {
			if err := t.coll.Broadcast(ctx, hdr, 0); err != nil {
				return false, fmt.Errorf("train: rank %d: receive the AdamW state from rank 0: %w", t.coll.Rank(), err)
			}
			switch code := int(getBits(hdr[0:])); code {
			case momData:
				which, off, n := int(getBits(hdr[2:])), int(getBits(hdr[4:])), int(getBits(hdr[6:]))
				if n > k || off < 0 || off+n > t.flat.padded || which < 0 || which > 1 {
					return false, fmt.Errorf("train: rank %d: a chunk of the AdamW state from rank 0 for [%d,%d) of moment %d, out of the layout's %d (or over %d floats): another gptkit version on rank 0?", t.coll.Rank(), off, off+n, which, t.flat.padded, k)
				}
				if err := t.coll.Broadcast(ctx, stage[:n], 0); err != nil {
					return false, fmt.Errorf("train: rank %d: receive the AdamW state from rank 0: %w", t.coll.Rank(), err)
				}
				place(which, off, stage[:n])
			case momDone:
				return false, nil
			case momAgain:
				return true, nil
			default:
				return false, fmt.Errorf("train: rank %d: a message %d from rank 0 where the AdamW state was expected: another gptkit version on rank 0?", t.coll.Rank(), code)
			}
		}
	}
	var sendErr error // a collective's: the others cannot be told anything more
	send := func(code, which, off, n int) error {
		putBits(hdr[0:], float64(code))
		putBits(hdr[2:], float64(which))
		putBits(hdr[4:], float64(off))
		putBits(hdr[6:], float64(n))
		if err := t.coll.Broadcast(ctx, hdr, 0); err != nil {
			sendErr = fmt.Errorf("train: broadcast the AdamW state: %w", err)
		}
		return sendErr
	}
	dest := func(which int) tensorDest {
		return tensorDest{put: func(off int, vals []float32) error {
			for c := 0; c < len(vals); c += k {
				n := min(k, len(vals)-c)
				if err := send(momData, which, off+c, n); err != nil {
					return err
				}
				copy(stage[:n], vals[c:c+n])
				if err := t.coll.Broadcast(ctx, stage[:n], 0); err != nil {
					sendErr = fmt.Errorf("train: broadcast the AdamW state: %w", err)
					return sendErr
				}
				place(which, off+c, stage[:n])
			}
			return nil
		}}
	}
	err = t.model.readInto(ctx, moments.cd, OptimizerFile, []string{"exp_avg.", "exp_avg_sq."}, dest(0), dest(1))
	if sendErr != nil {
		return false, sendErr
	}
	if err == nil {
		t.logResumed()
		return false, send(momDone, 0, 0, 0)
	}
	older, err := t.fallBack(ctx, moments.cd.Path(), err)
	if older != nil {
		var next *resumeMoments
		if next, err = t.restoreNewestIntact(ctx, older.Path(), older); err == nil {
			*moments = *next
			return true, send(momAgain, 0, 0, 0)
		}
	}
	return false, err
}

// agreeStop decides, the same way on every rank, whether to stop before the next
// step: when any rank's context is done (a signal). One rank deciding alone would
// leave the others waiting in the step's collectives.
func (t *Trainer) agreeStop(ctx context.Context) (bool, error) {
	if t.coll.World() == 1 {
		return ctx.Err() != nil, nil
	}
	var flag float64
	if ctx.Err() != nil {
		flag = 1
	}
	all, err := t.gather(context.WithoutCancel(ctx), flag)
	if err != nil {
		return false, fmt.Errorf("train: agree on stopping before step %d: %w", t.step+1, err)
	}
	return slices.Contains(all, 1), nil
}

// checkSameData compares every rank's data with rank 0's: the datasets' contents
// (loader.Data.DataKeys: shard checksums, blend weights) and the splits' sample
// counts. Each rank takes its share of the global sample sequence its own data
// gives, so a node reading another copy of the dataset (a stale or re-made one on
// its local disk) would train on samples of another order, repeating some and
// skipping others, without any error.
func (t *Trainer) checkSameData(ctx context.Context) error {
	if t.coll.World() == 1 {
		return nil
	}
	h := fnv.New64a()
	for k, key := range t.data.DataKeys {
		var n int64
		if s := t.data.Split(k); s != nil {
			n = s.Len()
		}
		fmt.Fprintf(h, "%s %d\n", key, n)
	}
	sum := h.Sum64()
	// Two exact 32-bit halves: float64 values that are small integers.
	all, err := t.gather(context.WithoutCancel(ctx), float64(sum>>32), float64(uint32(sum)))
	if err != nil {
		return fmt.Errorf("train: compare the ranks' data: %w", err)
	}
	var bad []string
	for r := 1; r < t.coll.World(); r++ {
		if all[2*r] != all[0] || all[2*r+1] != all[1] {
			bad = append(bad, strconv.Itoa(r))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("train: the data of rank(s) %s differs from rank 0's (other shard checksums, blend weights or sample counts): every rank must read the same dataset, or each takes its share of another sample order\n---> HINT: give every node the same copy of the data (compare their manifest.json files), or read it from a shared filesystem or S3",
			strings.Join(bad, ","))
	}
	return nil
}

// checkEvery is how often (in steps) the ranks compare their weights' checksums,
// besides the last step and every checkpoint.
const checkEvery = 100

// checkWeights compares a checksum (CRC-32C) of every rank's weights with rank
// 0's: data-parallel ranks apply the same update to the same weights, so any
// difference is a fault (a nondeterministic kernel, memory corruption) that would
// only grow.
func (t *Trainer) checkWeights(ctx context.Context) error {
	if t.coll.World() == 1 {
		return nil
	}
	if err := t.syncMasters(ctx); err != nil {
		return fmt.Errorf("train: step %d: gather the float32 weights: %w", t.step, err)
	}
	all, err := t.gather(ctx, float64(t.model.paramsCRC()))
	if err != nil {
		return fmt.Errorf("train: step %d: compare the ranks' weights: %w", t.step, err)
	}
	var bad []string
	for r, s := range all {
		if s != all[0] {
			bad = append(bad, strconv.Itoa(r))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("train: step %d: the weights of rank(s) %s differ from rank 0's (checksum %08x vs %08x): the data-parallel ranks diverged (a nondeterministic kernel or a hardware fault)\n---> HINT: resume from the newest checkpoint; if it recurs, run with --device ref to find the kernel",
			t.step, strings.Join(bad, ", "), uint32(all[mustAtoi(bad[0])]), uint32(all[0]))
	}
	return nil
}

func mustAtoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// span is a range [lo, hi) of the flat buffers.
type span struct{ lo, hi int }

// bucketPlan says which parts of the gradient each stage of the backward pass
// finishes (see Model.gradsDone) and how large a bucket grows before its
// all-reduce starts.
type bucketPlan struct {
	stages map[int][]span
	limit  int // floats
}

// planBuckets maps each tensor to its stage: the blocks' to their layer, the final
// LayerNorm's to NLayer, the embeddings' to -1.
func planBuckets(m *Model, mb float64) *bucketPlan {
	p := &bucketPlan{stages: map[int][]span{}, limit: max(int(mb*(1<<20)/4), 1)}
	for _, ti := range m.Tensors {
		stage := -1
		switch {
		case strings.HasPrefix(ti.Name, "transformer.h."):
			rest := strings.TrimPrefix(ti.Name, "transformer.h.")
			l, _, _ := strings.Cut(rest, ".")
			stage, _ = strconv.Atoi(l)
		case strings.HasPrefix(ti.Name, "transformer.ln_f."):
			stage = m.Config.NLayer
		}
		// The alignment gap after a tensor goes with it (zeros), so that neighbours merge.
		s := span{ti.Offset, ti.Offset + (ti.Size+align-1)/align*align}
		p.stages[stage] = append(p.stages[stage], s)
	}
	return p
}

// bucketRun all-reduces the buckets of one backward pass in the order the pass
// finishes them (the same on every rank): host gradients on a goroutine of its
// own (after a Sync: the backend has written them), device gradients on the
// collectives' communication stream (StreamCollectives: behind an event of the
// backend's stream, no host wait). Under ZeRO-1 (devices only) each part of a
// bucket is reduced to the rank whose shard holds it, as DeepSpeed's ZeRO
// reduces its buckets: after the pass each rank's shard holds the sum, as
// after a reduce-scatter.
type bucketRun struct {
	plan    *bucketPlan
	pending []span
	size    int
	send    func(job []span) // starts a bucket's all-reduces
	finish  func() error     // waits for them all
	waited  time.Duration
}

func (t *Trainer) startBuckets(ctx context.Context) *bucketRun {
	r := &bucketRun{plan: t.buckets}
	if sc, ok := t.streamCollectives(); ok {
		var err error // the first Start's error: the rest are not started
		shard := t.flat.hi - t.flat.lo
		r.send = func(job []span) {
			for _, s := range job {
				if !t.zero() {
					if err == nil {
						err = sc.StartAllReduceSumTensor(ctx, t.model.gradsAll.Slice(s.lo, s.hi))
					}
					continue
				}
				// ZeRO-1: each part of the span to the rank whose shard holds it.
				for lo := s.lo; lo < s.hi && err == nil; {
					owner := lo / shard
					hi := min(s.hi, (owner+1)*shard)
					err = sc.StartReduceSumTensor(ctx, t.model.gradsAll.Slice(lo, hi), owner)
					lo = hi
				}
			}
		}
		r.finish = func() error {
			if err != nil {
				return err
			}
			return sc.FinishCollectives(ctx)
		}
		return r
	}
	jobs, done := make(chan []span, 2*len(t.buckets.stages)+1), make(chan error, 1)
	grads := t.model.Grads.Float32s() // host gradients
	go func() {
		var err error
		for job := range jobs {
			for _, s := range job {
				if err == nil {
					err = t.coll.AllReduceSum(ctx, grads[s.lo:s.hi])
				}
			}
		}
		done <- err
	}()
	r.send = func(job []span) {
		t.be.Sync() // the collectives read the gradients from the host
		jobs <- job
	}
	r.finish = func() error {
		close(jobs)
		return <-done
	}
	return r
}

// stage takes a finished stage's gradients into the bucket, and sends the bucket
// once it is full (or the pass is over).
func (r *bucketRun) stage(st int) {
	for _, s := range r.plan.stages[st] {
		r.pending = append(r.pending, s)
		r.size += s.hi - s.lo
	}
	if r.size >= r.plan.limit || st == -1 {
		r.flush()
	}
}

func (r *bucketRun) flush() {
	if len(r.pending) == 0 {
		return
	}
	slices.SortFunc(r.pending, func(a, b span) int { return a.lo - b.lo })
	merged := []span{r.pending[0]}
	for _, s := range r.pending[1:] {
		if last := &merged[len(merged)-1]; s.lo == last.hi {
			last.hi = s.hi
		} else {
			merged = append(merged, s)
		}
	}
	r.send(merged)
	r.pending, r.size = nil, 0
}

// wait sends what is left and waits for every bucket's all-reduce.
func (r *bucketRun) wait() error {
	r.flush()
	start := time.Now()
	err := r.finish()
	r.waited = time.Since(start)
	return err
}

// ErrCheckpointFailed is in the error of a Train interrupted (a stop signal) whose
// checkpoint on the way out failed: the steps since the last one are lost, which an
// "interrupted" alone would hide.
var ErrCheckpointFailed = errors.New("the checkpoint failed")

// ErrPeerInterrupted ends Train on the ranks whose own stop signal had not arrived
// when the ranks agreed to stop (another rank's had, or only another rank got one):
// every rank stops after the same step. A launcher signals every rank, so its words
// do not say that the signal went to another rank only.
var ErrPeerInterrupted = errors.New("the ranks stopped together on a stop signal (SIGINT, SIGTERM, SIGHUP or SIGQUIT) to the launcher or to one of them")

// gatherWeights all-gathers the weights ZeRO-1's shards updated. With a
// compute dtype below float32 on a device that takes it (NCCL), the compute
// copy is gathered (bfloat16: half the bytes of the float32 masters), in place
// on the device; each rank's float32 masters are then current in its shard
// only, until syncMasters. Otherwise the float32 masters are gathered and the
// compute copy made from them.
func (t *Trainer) gatherWeights(ctx context.Context) error {
	m := t.model
	if tc, ok := t.coll.(TensorCollectives); ok && !m.workAll.IsHost() && !m.workAll.Same(m.paramsAll) {
		if err := tc.AllGatherTensor(ctx, m.workAll); err != nil {
			return err
		}
		t.mastersStale = true
		return nil
	}
	if err := t.onTensor(ctx, allGather, m.paramsAll); err != nil {
		return err
	}
	m.SyncWork()
	return nil
}

// syncMasters all-gathers the float32 master weights when gatherWeights left
// them current in each rank's shard only: before the weights are compared or
// saved (every rank calls it at the same points).
func (t *Trainer) syncMasters(ctx context.Context) error {
	if !t.mastersStale {
		return nil
	}
	if err := t.onTensor(ctx, allGather, t.model.paramsAll); err != nil {
		return err
	}
	t.mastersStale = false
	return nil
}
