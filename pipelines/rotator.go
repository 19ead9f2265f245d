package pipelines

import (
	"context"

	"gptkit/prep"
	"gptkit/shards"
	"gptkit/storage"
)

// shardRotator writes one split's documents to its current shard and closes the shard
// right after the first document that takes its .bin to shardBytes or more (0: one shard
// for the whole split), and right before a document of another stripe (see stripeKey).
// The boundaries depend only on the documents, never on batches or workers, which is
// what lets a resumed run continue at any shard.
type shardRotator struct {
	ctx        context.Context
	st         storage.Store
	dir, name  string
	split      string
	dtype      shards.DType
	shardBytes int64
	next       int // index of the next shard to start
	// committed is called after each shard is committed, with its prefix relative to
	// the dataset directory and its split set, and the bytes of text it encodes.
	committed func(info shards.ShardInfo, textBytes int64) error
	// check, if set, is called before each shard is committed: an error (the writer
	// lock was lost) stops the run before it writes.
	check func() error
	// ranges are what the split's documents are read from (prep.Doc.Range indexes
	// them), and inputIdx the index among the split's inputs of each one's file (only
	// needed where ranges are striped).
	ranges   []prep.FileRange
	inputIdx []int

	cur       *shards.Writer
	curStripe stripeKey // of the documents in cur
	bytes     int64     // .bin bytes in cur
	textBytes int64     // bytes of text encoded in cur
}

// stripeKey says which stripe of which input a document belongs to: the zero value for
// a document that was not read in stripes. A shard holds documents of one key only, so
// that the merge can put a shared input's shards in stripe order (shards.StripeInfo).
type stripeKey struct {
	striped bool
	input   int
	file    string
	stripe  int64
}

// stripeOf is the stripeKey of d.
func (s *shardRotator) stripeOf(d prep.Doc) stripeKey {
	if d.Range < 0 || d.Range >= len(s.ranges) || !s.ranges[d.Range].IsStriped() {
		return stripeKey{}
	}
	return stripeKey{striped: true, input: s.inputIdx[d.Range], file: s.ranges[d.Range].File, stripe: d.Stripe}
}

// add writes one document's ids; textBytes is the length of its text, for the journal,
// and key its stripe.
func (s *shardRotator) add(ids docIDs, textBytes int, key stripeKey) error {
	if s.cur != nil && key != s.curStripe {
		if err := s.closeCurrent(); err != nil {
			return err
		}
	}
	if s.cur == nil {
		w, err := shards.NewWriter(s.ctx, s.st, joinKey(s.dir, ShardPrefix(s.name, s.split, s.next)), s.dtype)
		if err != nil {
			return err
		}
		s.cur, s.curStripe, s.bytes, s.textBytes = w, key, 0, 0
	}
	if err := s.cur.AddDocumentInt32(ids...); err != nil {
		return err
	}
	s.bytes += int64(ids.len() * s.dtype.Size())
	s.textBytes += int64(textBytes)
	if s.shardBytes > 0 && s.bytes >= s.shardBytes {
		return s.closeCurrent()
	}
	return nil
}

func (s *shardRotator) closeCurrent() error {
	if s.check != nil {
		if err := s.check(); err != nil {
			s.cur.Abort()
			s.cur = nil
			return err
		}
	}
	info, err := s.cur.Close()
	s.cur = nil
	if err != nil {
		return err
	}
	info.Prefix, info.Split = ShardPrefix(s.name, s.split, s.next), s.split
	if k := s.curStripe; k.striped {
		info.Stripe = &shards.StripeInfo{Input: k.input, File: k.file, Stripe: k.stripe}
	}
	s.next++
	return s.committed(info, s.textBytes)
}

// finish closes the last shard, if any.
func (s *shardRotator) finish() error {
	if s.cur == nil {
		return nil
	}
	return s.closeCurrent()
}

// abort discards the shard being written.
func (s *shardRotator) abort() {
	if s.cur != nil {
		s.cur.Abort()
		s.cur = nil
	}
}
