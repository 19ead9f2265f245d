package storage

import (
	"log/slog"
	"testing"
)

// TestS3WriterReleasePoolsOversizedParts: parts grow past the 1000th (partCap), and a
// writer's last buffer goes back to the pool only at the base size: release pooled it
// whatever its size, and after one object of more than 1000 parts later writers' "part 1"
// was 16..512 MiB (their memory no longer what PartSize says).
func TestS3WriterReleasePoolsOversizedParts(t *testing.T) {
	s := &s3Store{partSize: MinPartSize, concurrency: 1, log: slog.New(slog.DiscardHandler)}
	// A writer that has flushed 6000 parts holds a buffer for part 6001 (the largest
	// size); it ends (Abort here: no upload was started on a server, so no request).
	w := &s3Writer{s: s, sem: make(chan struct{}, 1), buf: s.getPart(6001)}
	if c := cap(*w.buf); c <= MinPartSize {
		t.Fatalf("setup: part 6001 has cap %d", c)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	// The next writer's first part.
	b := s.getPart(1)
	if got := int64(cap(*b)); got != s.partSize {
		t.Fatalf("a new writer's first part buffer has cap %d MiB, want the part size %d MiB (release pooled an oversized buffer)", got>>20, s.partSize>>20)
	}
}
