package storage

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// maxReopens bounds how often Read resumes a stream that broke mid-body.
const maxReopens = 3

func (s *s3Store) Open(ctx context.Context, key string) (Object, error) {
	if err := s.check(ctx, key); err != nil {
		return nil, err
	}
	okey := s.objectKey(key)
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &okey})
	if err != nil {
		return nil, s.wrap("open", key, err)
	}
	return &s3Object{s: s, ctx: ctx, key: key, okey: okey, size: aws.ToInt64(out.ContentLength), etag: aws.ToString(out.ETag)}, nil
}

// s3Object reads one version of an object: every GET carries If-Match with the ETag seen
// at Open, so an object replaced while it is read fails loudly instead of mixing versions.
// ReadAt issues one ranged GET per call and is safe for concurrent use; Read streams one
// GET from the current offset and resumes it (a new ranged GET) if the body breaks.
// version is the ETag of the object as opened (unquoted, as Info.ETag): what its
// reads return.
func (o *s3Object) version() string { return unquote(o.etag) }

type s3Object struct {
	s    *s3Store
	ctx  context.Context
	key  string
	okey string
	size int64
	etag string

	body io.ReadCloser // Read's stream, nil until the first Read
	pos  int64         // Read's offset
}

func (o *s3Object) Size() int64 { return o.size }

func (o *s3Object) get(off, end int64) (io.ReadCloser, error) {
	in := &s3.GetObjectInput{Bucket: &o.s.bucket, Key: &o.okey, IfMatch: aws.String(o.etag)}
	if end < 0 {
		in.Range = aws.String(fmt.Sprintf("bytes=%d-", off))
	} else {
		in.Range = aws.String(fmt.Sprintf("bytes=%d-%d", off, end))
	}
	out, err := o.s.client.GetObject(o.ctx, in)
	if err != nil {
		if isPrecondition(err) {
			return nil, fmt.Errorf("storage: read %s: the object changed since Open (ETag no longer %s); open it again", o.s.uri(o.key), o.etag)
		}
		return nil, o.s.wrap("read", o.key, err)
	}
	return out.Body, nil
}

func (o *s3Object) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("storage: read %s: negative offset %d", o.s.uri(o.key), off)
	}
	if off >= o.size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	want := int64(len(p))
	if rest := o.size - off; want > rest {
		want = rest
	}
	body, err := o.get(off, off+want-1)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	n, err := io.ReadFull(body, p[:want])
	if err != nil {
		return n, fmt.Errorf("storage: read %s at %d: %w", o.s.uri(o.key), off, err)
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (o *s3Object) Read(p []byte) (int, error) {
	if o.pos >= o.size {
		return 0, io.EOF
	}
	if len(p) == 0 {
		return 0, nil
	}
	var lastErr error
	for range maxReopens + 1 {
		if o.body == nil {
			body, err := o.get(o.pos, -1)
			if err != nil {
				return 0, err
			}
			o.body = body
		}
		n, err := o.body.Read(p)
		o.pos += int64(n)
		if n > 0 || err == nil {
			return n, nil // errors other than at the end are retried on the next call
		}
		o.body.Close()
		o.body = nil
		if errors.Is(err, io.EOF) && o.pos >= o.size {
			return 0, io.EOF
		}
		if o.ctx.Err() != nil {
			return 0, o.ctx.Err()
		}
		lastErr = err
		o.s.log.Debug("storage: resuming a broken read", "key", o.s.uri(o.key), "offset", o.pos, "err", err)
	}
	return 0, fmt.Errorf("storage: read %s at %d: %w (the connection broke %d times)", o.s.uri(o.key), o.pos, lastErr, maxReopens+1)
}

func (o *s3Object) Close() error {
	if o.body != nil {
		err := o.body.Close()
		o.body = nil
		return err
	}
	return nil
}
