package pipelines

import (
	"context"

	"gptkit/shards"
	"gptkit/storage"
)

// shardRotator writes one split's documents to its current shard and closes the shard
// right after the first document that takes its .bin to shardBytes or more (0: one shard
// for the whole split). The boundaries depend only on the documents, never on batches or
// workers, which is what lets a resumed run continue at any shard.
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

	cur       *shards.Writer
	bytes     int64 // .bin bytes in cur
	textBytes int64 // bytes of text encoded in cur
}

// add writes one document's ids; textBytes is the length of its text, for the journal.
func (s *shardRotator) add(ids []int, textBytes int) error {
	if s.cur == nil {
		w, err := shards.NewWriter(s.ctx, s.st, joinKey(s.dir, ShardPrefix(s.name, s.split, s.next)), s.dtype)
		if err != nil {
			return err
		}
		s.cur, s.bytes, s.textBytes = w, 0, 0
	}
	if err := s.cur.AddDocument(ids); err != nil {
		return err
	}
	s.bytes += int64(len(ids) * s.dtype.Size())
	s.textBytes += int64(textBytes)
	if s.shardBytes > 0 && s.bytes >= s.shardBytes {
		return s.closeCurrent()
	}
	return nil
}

func (s *shardRotator) closeCurrent() error {
	info, err := s.cur.Close()
	s.cur = nil
	if err != nil {
		return err
	}
	info.Prefix, info.Split = ShardPrefix(s.name, s.split, s.next), s.split
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
