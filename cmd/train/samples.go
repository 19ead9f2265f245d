package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"strconv"

	"gptkit/internal/cli"
	"gptkit/loader"
)

// runSamples implements `train samples`.
func runSamples(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c := cli.NewCommand("train", "samples",
		"--data DATA --seq-len L --num-samples N [--seed S] [--order default|neox] [--split 969,30,1] [--first K] [--count C] [--rank R --world W --micro-batch M --grad-accum G]",
		"Prints training samples, one JSON array of L+1 token ids per line: those of the training\n"+
			"split of DATA, which is a dataset directory, s3://bucket/prefix, a bare GPT-NeoX PREFIX\n"+
			"(PREFIX.bin + PREFIX.idx), a blend file FILE.yaml (datasets: [{path: dirA, weight: 0.7},\n"+
			"...]) or an inline blend 0.7:dirA,0.3:dirB. The split's documents (--split over all\n"+
			"documents, as GPT-NeoX's data_path; a manifest whose shards are labeled train/val/test\n"+
			"uses its train shards) are shuffled with --seed, packed into samples of L+1 tokens and\n"+
			"shuffled again: --order neox exactly as GPT-NeoX's GPT2Dataset (and BlendableDataset for\n"+
			"blends), --order default per epoch (every token once per epoch). The index is built for\n"+
			"--num-samples samples (GPT-NeoX: train_iters x train_batch_size) and cached beside the\n"+
			"data (else under --cache-dir) under a hash of its inputs.\n\n"+
			"Without --rank it prints samples K..K+C-1; without --count, those of the N a run reads\n"+
			"from K on: K..N-1 (up to the index's last sample, if it holds fewer; an index holds\n"+
			"whole epochs, often many more than N: --count -1 prints them all). With --rank it\n"+
			"prints what that data-parallel rank receives, micro-batch by micro-batch: each global\n"+
			"micro-batch is M x W consecutive samples and rank R takes [R*M, (R+1)*M); --first is\n"+
			"then the resume cursor (samples consumed by all ranks, a multiple of M x W) and --count\n"+
			"the number of lines to print (without it, the rank's share of the global micro-batches\n"+
			"within the first N samples; -1: within the index).")
	dataFlag := c.Flags.String("data", "", "the `DATA`: a dataset directory, s3://bucket/prefix, a bare PREFIX, FILE.yaml or 0.7:dirA,0.3:dirB (required)")
	seqLen := c.Flags.Int("seq-len", 0, "the sequence length `L`; every sample has L+1 tokens (required)")
	seed := c.Flags.Uint("seed", 1234, "the shuffle `SEED` (GPT-NeoX's seed)")
	numSamples := c.Flags.Int64("num-samples", -1, "the number of samples `N` the index is built for (required)")
	order := c.Flags.String("order", loader.OrderDefault, "the sample `ORDER`: default (shuffled per epoch) or neox (GPT-NeoX's, sample for sample)")
	splitStr := c.Flags.String("split", "969,30,1", "the train,valid,test `WEIGHTS` dividing the documents (GPT-NeoX's split)")
	first := c.Flags.Int64("first", 0, "the first sample `K` (with --rank: the global cursor)")
	countFlag := countValue{n: -1}
	c.Flags.Var(&countFlag, "count", "print `C` samples (-1: up to the index's last sample; not given: up to sample N-1, the last of the --num-samples N a run reads)")
	count := &countFlag.n
	rank := c.Flags.Int("rank", -1, "print the samples data-parallel rank `R` receives")
	world := c.Flags.Int("world", 0, "--rank: the data-parallel world size `W`")
	micro := c.Flags.Int("micro-batch", 1, "--rank: the per-rank micro-batch size `M`")
	gradAccum := c.Flags.Int("grad-accum", 1, "--rank: the gradient accumulation steps `G` (the global batch is M x W x G)")
	var s3 cli.S3Flags
	var cacheDir string
	s3.Register(c.Flags)
	cli.RegisterCacheDir(c.Flags, &cacheDir, "the index files of data that cannot hold them")
	if code, ok := c.Parse(args, stderr); !ok {
		return code
	}
	set := map[string]bool{}
	c.Flags.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case *dataFlag == "":
		return c.UsageError(stderr, "--data DATA is required")
	case *seqLen < 1:
		return c.UsageError(stderr, "--seq-len L is required (a positive sequence length)")
	case *numSamples < 0:
		return c.UsageError(stderr, "--num-samples N is required (the number of samples the index is built for)")
	case *seed > 1<<32-1:
		return c.UsageError(stderr, fmt.Sprintf("--seed %d does not fit 32 bits (numpy's RandomState seed)", *seed))
	case *order != loader.OrderDefault && *order != loader.OrderNeoX:
		return c.UsageError(stderr, fmt.Sprintf("--order %q: want default or neox", *order))
	case *first < 0:
		return c.UsageError(stderr, "--first must be >= 0")
	case *count < -1:
		return c.UsageError(stderr, "--count must be >= 0 (or -1: all)")
	}
	if _, err := loader.ParseSplit(*splitStr); err != nil {
		return c.UsageError(stderr, "--split: "+err.Error())
	}
	distributed := set["rank"] || set["world"] || set["micro-batch"] || set["grad-accum"]
	if distributed {
		switch {
		case !set["rank"] || !set["world"]:
			return c.UsageError(stderr, "--rank and --world go together")
		case *world < 1:
			return c.UsageError(stderr, "--world must be >= 1")
		case *rank < 0 || *rank >= *world:
			return c.UsageError(stderr, fmt.Sprintf("--rank %d is not in [0,%d)", *rank, *world))
		case *micro < 1:
			return c.UsageError(stderr, "--micro-batch must be >= 1")
		case *gradAccum < 1:
			return c.UsageError(stderr, "--grad-accum must be >= 1")
		case *first%(int64(*micro)*int64(*world)) != 0:
			return c.UsageError(stderr, fmt.Sprintf("with --rank, --first %d must be a multiple of the global micro-batch %d (M x W)", *first, *micro**world))
		}
	}

	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	open := func(n int64) (*loader.Data, error) {
		return loader.Open(ctx, loader.Options{
			Data: *dataFlag, SeqLen: *seqLen, Seed: uint32(*seed), Order: *order, Split: *splitStr,
			NumSamples: [3]int64{max(n, 1), 0, 0}, CacheDir: cacheDir, S3Endpoint: s3.Endpoint, S3PathStyle: s3.PathStyle,
			Logger: log,
		})
	}
	data, err := open(*numSamples)
	if err != nil {
		return fail(ctx, stderr, err)
	}
	// GPT-NeoX's order serves one sample fewer than its index holds (a blend: one
	// fewer per dataset); a run that needs every one builds the index for that many
	// more (train's openData), and without --count these are the samples it reads.
	// (--count prints the index built for exactly N, GPT-NeoX's own.)
	if n := data.Train.Len(); !set["count"] && *order == loader.OrderNeoX && n < *numSamples {
		more := int64(1)
		if b, ok := data.Train.(*loader.Blend); ok {
			more = int64(len(b.Sources))
		}
		if *numSamples-n <= more {
			data.Close()
			log.Warn("GPT-NeoX's order serves one sample fewer than its index holds (a blend: one fewer per dataset): the index is built for more, as a run of --num-samples N does", "samples", *numSamples, "index_for", *numSamples+more)
			if data, err = open(*numSamples + more); err != nil {
				return fail(ctx, stderr, err)
			}
		}
	}
	defer data.Close()
	s := data.Train
	// limit is where the samples printed without --count end: the N a run reads (the
	// index's own length, if shorter), or with --count -1 the index's end.
	limit := s.Len()
	if !set["count"] {
		limit = min(*numSamples, s.Len())
		if *first > limit && limit == *numSamples { // past the index's end: said below
			return fail(ctx, stderr, fmt.Errorf("--first %d is past the %d samples a run of --num-samples %d reads (0..%d): pass --count C to print samples beyond them (the index holds %d)", *first, *numSamples, *numSamples, *numSamples-1, s.Len()))
		}
	}

	w := bufio.NewWriterSize(stdout, 1<<16)
	var line []byte
	var ids []int
	emit := func(ids []int) error {
		line = append(line[:0], '[')
		for k, id := range ids {
			if k > 0 {
				line = append(line, ',')
			}
			line = strconv.AppendInt(line, int64(id), 10)
		}
		line = append(line, ']', '\n')
		_, err := w.Write(line)
		return err
	}
	if !distributed {
		if *first > s.Len() {
			return fail(ctx, stderr, fmt.Errorf("--first %d is past the last sample: the index holds %d samples (0..%d)", *first, s.Len(), s.Len()-1))
		}
		end := limit
		if *count >= 0 {
			if *count > s.Len()-*first {
				return fail(ctx, stderr, fmt.Errorf("samples %d..%d are past the last sample: the index holds %d samples (raise --num-samples)", *first, *first+*count-1, s.Len()))
			}
			end = *first + *count
		}
		for i := *first; i < end; i++ {
			if i%4096 == 0 && ctx.Err() != nil {
				return fail(ctx, stderr, ctx.Err())
			}
			ids = s.Sample(i, ids[:0])
			if err := emit(ids); err != nil {
				return fail(ctx, stderr, err)
			}
		}
	} else {
		sm := &loader.Sampler{Samples: s, Rank: *rank, World: *world, Micro: *micro, GradAccum: *gradAccum, Cursor: loader.Cursor{Consumed: *first}}
		var batch [][]int
		for printed := int64(0); *count < 0 || printed < *count; {
			if ctx.Err() != nil {
				return fail(ctx, stderr, ctx.Err())
			}
			if *count < 0 && sm.Cursor.Consumed+sm.GlobalMicro() > limit {
				break // all complete global micro-batches up to limit printed
			}
			if batch, err = sm.Next(batch); err != nil {
				return fail(ctx, stderr, err)
			}
			for _, ids := range batch {
				if *count >= 0 && printed == *count {
					break
				}
				if err := emit(ids); err != nil {
					return fail(ctx, stderr, err)
				}
				printed++
			}
		}
	}
	if err := w.Flush(); err != nil {
		return fail(ctx, stderr, err)
	}
	return cli.ExitOK
}

// fail prints err as the one line a failed command leaves on stderr (interrupted once
// ctx is canceled) and returns cli.ExitFailure.
func fail(ctx context.Context, stderr io.Writer, err error) int {
	return cli.Fail(stderr, "train samples", cli.Interrupted(ctx, err))
}

// countValue is --count: an int64 given or not (then -h shows no default: without it,
// the samples of --num-samples are printed).
type countValue struct {
	n   int64 // -1 until given
	set bool
}

func (v *countValue) String() string {
	if v == nil || !v.set {
		return ""
	}
	return strconv.FormatInt(v.n, 10)
}

func (v *countValue) Set(s string) error {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return errors.New("parse error")
	}
	v.n, v.set = n, true
	return nil
}
