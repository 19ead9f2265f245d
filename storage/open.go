package storage

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Options configure Open. The zero value is usable: S3 settings come from the standard
// AWS chain (environment, shared config files, instance metadata).
type Options struct {
	// S3Endpoint is the S3 server's URL (commands: --s3-endpoint), for S3-compatible
	// servers such as MinIO. Empty means $AWS_ENDPOINT_URL_S3, then $AWS_ENDPOINT_URL,
	// then AWS itself.
	S3Endpoint string
	// S3PathStyle addresses buckets as endpoint/bucket/key instead of bucket.endpoint/key.
	// It is switched on automatically when the endpoint's host is an IP address or
	// localhost.
	S3PathStyle bool
	// Region is the S3 region; empty means the standard chain ($AWS_REGION, the shared
	// config), else "us-east-1".
	Region string
	// Logger receives debug and warning lines; nil discards them. Credentials are never
	// logged.
	Logger *slog.Logger
	// PartSize is the S3 multipart part size in bytes: objects larger than this are
	// uploaded in parts, of this size for the first 1000 and doubling every 1000 after
	// (up to 512 MiB), so objects up to about 2.5 TiB fit S3's 10,000 parts. Default 8 MiB;
	// S3's minimum is 5 MiB.
	PartSize int64
	// Concurrency is how many parts one S3 Writer uploads at once (default 4). A Writer
	// holds up to Concurrency+1 parts in memory.
	Concurrency int
	// HTTPClient replaces the S3 client's HTTP client (tests count or fault requests); it
	// bypasses the SDK's transport settings such as AWS_CA_BUNDLE, and StallTimeout.
	HTTPClient *http.Client
	// StallTimeout fails an S3 request whose connection moves no byte for this long (a
	// server that is stopped rather than dead); the request is then retried (see
	// s3_stall.go). 0 means $GPTKIT_S3_STALL_TIMEOUT, else DefaultStallTimeout (60 s).
	StallTimeout time.Duration
}

const (
	// DefaultPartSize is the S3 multipart part size when Options.PartSize is 0.
	DefaultPartSize = 8 << 20
	// MinPartSize is S3's smallest allowed part (all but the last).
	MinPartSize = 5 << 20
)

const defaultConcurrency = 4

// Open returns the store at location: a directory path (created if missing) or
// s3://bucket/prefix. For S3 it checks the bucket once (HeadBucket) so that a wrong
// endpoint, region or credentials fail here rather than at the first Commit.
func Open(ctx context.Context, location string, opt Options) (Store, error) {
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	switch {
	case strings.HasPrefix(location, "s3://"):
		return openS3(ctx, location, opt)
	case strings.HasPrefix(location, "file://"):
		return openDir(strings.TrimPrefix(location, "file://"), opt)
	case strings.Contains(location, "://"):
		return nil, fmt.Errorf("storage: open %q: unsupported scheme (use a directory path or s3://bucket/prefix)", location)
	}
	return openDir(location, opt)
}

func openDir(path string, opt Options) (Store, error) {
	if path == "" {
		return nil, fmt.Errorf("storage: open: empty location (pass a directory path or s3://bucket/prefix)")
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", path, err)
	}
	if err := os.MkdirAll(abs, 0o777); err != nil {
		return nil, fmt.Errorf("storage: open %s: %w (check the path and its permissions)", abs, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", abs, err)
	}
	return &dirStore{root: abs, realRoot: real, log: opt.Logger}, nil
}
