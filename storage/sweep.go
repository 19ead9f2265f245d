package storage

import (
	"context"
	"fmt"
	"time"
)

// sweeper is implemented by stores that can clean up after crashed writers.
type sweeper interface {
	sweep(ctx context.Context, prefix string, cutoff time.Time) (int, error)
}

// Sweep removes what writers of keys starting with prefix ("" for all) left behind when
// they died before Commit or Abort, if it is older than olderThan: temp files of a
// directory store, incomplete multipart uploads (invisible, but stored and billed) of an
// S3 store. It returns how many it removed.
//
// Choose olderThan longer than any live writer runs: Sweep cannot tell a crashed writer
// from a slow one. MinIO lists multipart uploads only for an exact key, so there pass the
// key as prefix; MinIO also removes uploads left for 24 h by itself
// (MINIO_API_STALE_UPLOADS_EXPIRY), and on AWS a lifecycle rule with
// AbortIncompleteMultipartUpload does the same.
func Sweep(ctx context.Context, st Store, prefix string, olderThan time.Duration) (int, error) {
	if err := checkPrefix(prefix); err != nil {
		return 0, fmt.Errorf("storage: sweep %s: %w", st, err)
	}
	sw, ok := st.(sweeper)
	if !ok {
		return 0, fmt.Errorf("storage: sweep %s: not supported by this store", st)
	}
	return sw.sweep(ctx, prefix, time.Now().Add(-olderThan))
}
