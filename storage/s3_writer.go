package storage

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
)

// abortTimeout bounds the AbortMultipartUpload issued after a failure, which runs on a
// context detached from the (possibly cancelled) caller's.
const abortTimeout = 30 * time.Second

// conflictRetries is how often Commit re-sends its final request after S3 answers 409
// ConditionalRequestConflict (a concurrent conditional write was in flight).
const conflictRetries = 3

func (s *s3Store) Create(ctx context.Context, key string, opts ...WriteOption) (Writer, error) {
	if err := s.check(ctx, key); err != nil {
		return nil, err
	}
	o := ApplyWriteOptions(opts)
	if err := checkWriteOptions(s.uri(key), o); err != nil {
		return nil, err
	}
	w := &s3Writer{s: s, ctx: ctx, key: key, okey: s.objectKey(key), opts: o, sem: make(chan struct{}, s.concurrency)}
	w.buf = s.getPart(1)
	return w, nil
}

// s3Writer buffers one part in memory. When a full part is followed by more data, a
// multipart upload starts (CreateMultipartUpload) and parts upload in the background, up
// to the store's Concurrency at once; Write blocks while that many are in flight. An
// object that fits in one part is sent by Commit as a single conditional PutObject. Until
// Commit's final request (PutObject or CompleteMultipartUpload) nothing is visible under
// the key.
type s3Writer struct {
	s    *s3Store
	ctx  context.Context
	key  string
	okey string
	opts WriteOptions

	buf      *[]byte // the part being filled
	uploadID string  // "" until the first full part
	nparts   int32
	size     int64
	done     bool
	werr     error // a Write-side failure (CreateMultipartUpload)

	sem   chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	parts []types.CompletedPart // by part number - 1
	perr  error                 // first part upload failure
}

// maxPartSize bounds part growth (see partCap).
const maxPartSize = 512 << 20

// partCap is the size of part number n (from 1): PartSize for the first 1000 parts, then
// doubling every 1000 parts up to maxPartSize, so that S3's 10,000 parts hold objects of
// about 2.5 TiB from an 8 MiB PartSize while small objects keep small parts (a short tail to
// upload at Commit).
func (s *s3Store) partCap(n int32) int64 {
	size := s.partSize << min((n-1)/1000, 6)
	return max(min(size, maxPartSize), s.partSize)
}

// getPart returns an empty buffer for part number n; buffers of the base part size are
// pooled.
func (s *s3Store) getPart(n int32) *[]byte {
	size := s.partCap(n)
	if size == s.partSize {
		if b, ok := s.parts.Get().(*[]byte); ok {
			*b = (*b)[:0]
			return b
		}
	}
	b := make([]byte, 0, size)
	return &b
}

func (s *s3Store) putPart(b *[]byte) {
	if int64(cap(*b)) == s.partSize {
		s.parts.Put(b)
	}
}

func (w *s3Writer) Write(p []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("storage: write %s: %w", w.s.uri(w.key), errDone)
	}
	if err := w.failed(); err != nil {
		return 0, err
	}
	n := 0
	for len(p) > 0 {
		// A full part is sent only once more data follows, so an object of exactly
		// PartSize bytes still goes as one PutObject.
		if len(*w.buf) == cap(*w.buf) {
			if err := w.flushPart(); err != nil {
				return n, err
			}
		}
		b := *w.buf
		k := copy(b[len(b):cap(b)], p)
		*w.buf = b[:len(b)+k]
		p = p[k:]
		n += k
		w.size += int64(k)
	}
	return n, nil
}

// failed returns the first failure of Write or of a background part upload.
func (w *s3Writer) failed() error {
	if w.werr != nil {
		return w.werr
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.perr
}

// flushPart hands the full buffer to a background upload and starts a new one.
func (w *s3Writer) flushPart() error {
	if w.uploadID == "" {
		in := &s3.CreateMultipartUploadInput{Bucket: &w.s.bucket, Key: &w.okey}
		if w.s.checksums {
			in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32
		}
		out, err := w.s.client.CreateMultipartUpload(w.ctx, in)
		if err != nil {
			w.werr = w.s.wrap("write", w.key, err)
			return w.werr
		}
		w.uploadID = aws.ToString(out.UploadId)
		w.s.log.Debug("storage: multipart upload started", "key", w.s.uri(w.key), "part_size", w.s.partSize)
	}
	w.nparts++
	num, buf := w.nparts, w.buf
	w.buf = w.s.getPart(num + 1)
	w.sem <- struct{}{}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		defer func() { <-w.sem }()
		err := w.uploadPart(num, *buf)
		w.s.putPart(buf)
		if err != nil {
			w.mu.Lock()
			if w.perr == nil {
				w.perr = err
			}
			w.mu.Unlock()
		}
	}()
	return w.failed()
}

func (w *s3Writer) uploadPart(num int32, data []byte) error {
	in := &s3.UploadPartInput{
		Bucket: &w.s.bucket, Key: &w.okey, UploadId: &w.uploadID, PartNumber: aws.Int32(num),
		Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
	}
	if w.s.checksums {
		in.ChecksumAlgorithm = types.ChecksumAlgorithmCrc32
	}
	out, err := w.s.client.UploadPart(w.ctx, in)
	if err != nil {
		return fmt.Errorf("storage: write %s: part %d: %w%s", w.s.uri(w.key), num, err, w.s.hint(err))
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for int(num) > len(w.parts) {
		w.parts = append(w.parts, types.CompletedPart{})
	}
	w.parts[num-1] = types.CompletedPart{
		PartNumber: aws.Int32(num), ETag: out.ETag,
		ChecksumCRC32: out.ChecksumCRC32, ChecksumCRC32C: out.ChecksumCRC32C,
		ChecksumCRC64NVME: out.ChecksumCRC64NVME, ChecksumSHA1: out.ChecksumSHA1, ChecksumSHA256: out.ChecksumSHA256,
	}
	return nil
}

func (w *s3Writer) Commit() error {
	if w.done {
		return fmt.Errorf("storage: commit %s: %w", w.s.uri(w.key), errDone)
	}
	w.done = true
	err := w.commit()
	if err != nil {
		w.abortUpload()
	}
	w.release()
	return err
}

func (w *s3Writer) commit() error {
	if err := w.failed(); err != nil {
		w.wg.Wait()
		return err
	}
	var ifNoneMatch, ifMatch *string
	if w.opts.IfAbsent {
		ifNoneMatch = aws.String("*")
	}
	if w.opts.IfMatch != "" {
		ifMatch = aws.String(quote(w.opts.IfMatch))
	}
	if w.uploadID == "" {
		data := *w.buf
		return w.final(func() error {
			_, err := w.s.client.PutObject(w.ctx, &s3.PutObjectInput{
				Bucket: &w.s.bucket, Key: &w.okey, Body: bytes.NewReader(data),
				ContentLength: aws.Int64(int64(len(data))), IfNoneMatch: ifNoneMatch, IfMatch: ifMatch,
			})
			return err
		})
	}
	if len(*w.buf) > 0 {
		w.nparts++
		if err := w.uploadPart(w.nparts, *w.buf); err != nil {
			w.wg.Wait()
			return err
		}
	}
	w.wg.Wait()
	if err := w.failed(); err != nil {
		return err
	}
	w.mu.Lock()
	parts := w.parts
	w.mu.Unlock()
	err := w.final(func() error {
		_, err := w.s.client.CompleteMultipartUpload(w.ctx, &s3.CompleteMultipartUploadInput{
			Bucket: &w.s.bucket, Key: &w.okey, UploadId: &w.uploadID,
			MultipartUpload: &types.CompletedMultipartUpload{Parts: parts},
			IfNoneMatch:     ifNoneMatch, IfMatch: ifMatch,
		})
		return err
	})
	if err == nil {
		w.uploadID = "" // completed: nothing to abort
		w.s.log.Debug("storage: multipart upload completed", "key", w.s.uri(w.key), "parts", len(parts), "bytes", w.size)
	}
	return err
}

// final sends Commit's publishing request, retrying S3's 409 ConditionalRequestConflict.
func (w *s3Writer) final(send func() error) error {
	var err error
	for attempt := range conflictRetries + 1 {
		if err = send(); err == nil || !isConflict(err) {
			break
		}
		w.s.log.Debug("storage: conditional write conflict; retrying", "key", w.s.uri(w.key), "attempt", attempt+1)
		select {
		case <-time.After(time.Duration(100<<attempt) * time.Millisecond):
		case <-w.ctx.Done():
			return fmt.Errorf("storage: commit %s: %w", w.s.uri(w.key), w.ctx.Err())
		}
	}
	if err == nil {
		return nil
	}
	// S3 answers If-Match on a missing key with 404 NoSuchKey.
	if isPrecondition(err) || (w.opts.IfMatch != "" && isNotFound(err)) {
		why := "the key already exists (IfAbsent)"
		if w.opts.IfMatch != "" {
			why = fmt.Sprintf("the key's ETag is no longer %s, or it was deleted (IfMatch)", w.opts.IfMatch)
		}
		return preconditionError(w.s.uri(w.key), why)
	}
	return fmt.Errorf("storage: commit %s: %w%s", w.s.uri(w.key), err, w.s.hint(err))
}

func (w *s3Writer) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.wg.Wait()
	err := w.abortUpload()
	w.release()
	return err
}

// abortUpload aborts the multipart upload, if one was started and not completed, on a
// context that survives the caller's cancellation, so that no parts are left behind.
func (w *s3Writer) abortUpload() error {
	w.wg.Wait()
	if w.uploadID == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.ctx), abortTimeout)
	defer cancel()
	_, err := w.s.client.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: &w.s.bucket, Key: &w.okey, UploadId: &w.uploadID})
	if err != nil && !isNoSuchUpload(err) {
		w.s.log.Warn("storage: abort multipart upload failed; its parts stay until storage.Sweep or a lifecycle rule removes them",
			"key", w.s.uri(w.key), "err", err)
		return fmt.Errorf("storage: abort %s: %w%s", w.s.uri(w.key), err, w.s.hint(err))
	}
	w.s.log.Debug("storage: multipart upload aborted", "key", w.s.uri(w.key))
	w.uploadID = ""
	return nil
}

func (w *s3Writer) release() {
	if w.buf != nil {
		w.s.putPart(w.buf) // a part of the base size only: a large part's buffer would make every later writer's first part that large
		w.buf = nil
	}
	w.parts = nil
}
