package storage

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// lockDir takes dir's lock object (see lock.go): created if absent, taken over if its
// lease has expired, else refused.
func (s *s3Store) lockDir(ctx context.Context, dir, owner string) (*Lock, error) {
	key := s.lockKey(dir)
	where := "s3://" + s.bucket + "/" + key
	since := time.Now()
	put := func(ctx context.Context, ifNoneMatch, ifMatch string) (string, error) {
		now := time.Now()
		data, _ := json.Marshal(thisProcess(lockInfo{Owner: owner, Since: since, Expires: now.Add(lockLease), Renewed: now, RenewEveryMS: renewEvery().Milliseconds()}))
		in := &s3.PutObjectInput{Bucket: &s.bucket, Key: &key, Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data)))}
		if ifMatch == "" {
			in.IfNoneMatch = aws.String(ifNoneMatch)
		} else {
			in.IfMatch = aws.String(ifMatch)
		}
		out, err := s.client.PutObject(ctx, in)
		if isPrecondition(err) || isConflict(err) {
			// The SDK retries a PUT whose answer was lost; when the lost one went
			// through, the retry's condition fails against this very object.
			if _, raw, held, rerr := s.readLock(ctx, key); rerr == nil && held != "" && bytes.Equal(raw, data) {
				return held, nil
			}
		}
		if err != nil {
			return "", err
		}
		return aws.ToString(out.ETag), nil
	}
	etag, err := put(ctx, "*", "")
	waited := false
	for try := 0; (isPrecondition(err) || isConflict(err)) && try < 100; try++ {
		info, raw, held, rerr := s.readLock(ctx, key)
		switch {
		case rerr != nil:
			return nil, fmt.Errorf("storage: lock %s: %w%s", where, rerr, s.hint(rerr))
		case held == "": // released meanwhile
			etag, err = put(ctx, "*", "")
			continue
		case info.expired() || holderDead(info):
			s.log.Warn("storage: taking over a writer lock whose holder died (its lease expired, or it was a process of this host that no longer runs)", "lock", where, "holder", info.Owner, "expires", info.Expires)
		case !info.stale():
			return nil, lockedError(where, info, raw)
		default:
			// Its holder stopped renewing it (killed on another host, or cut off
			// from the server, when it stops writing within half a lease): wait
			// for the lease to end, unless it renews meanwhile.
			wait := info.remaining()
			if !waited {
				s.log.Warn(fmt.Sprintf("storage: waiting %s for the writer lock of a holder that stopped renewing it (killed on another host?) to end, then taking it over", wait.Round(time.Second)),
					"lock", where, "holder", info.Owner, "not_renewed_for", info.age.Round(time.Second), "lease_ends", time.Now().Add(wait).UTC().Format(time.RFC3339))
				waited = true
			}
			renewed, werr := s.waitLockEnd(ctx, key, held, wait, info.renewEvery())
			if werr != nil {
				return nil, fmt.Errorf("storage: lock %s: waiting for the lease of %s to end: %w", where, info.Owner, werr)
			}
			if renewed {
				continue // decide again: renewed (a live holder), released or taken
			}
		}
		etag, err = put(ctx, "", held)
		if isNotFound(err) {
			// Released since it was read (If-Match on no object is S3's 404, not
			// 412): a free lock.
			etag, err = put(ctx, "*", "")
			continue
		}
		if isPrecondition(err) || isConflict(err) {
			info, raw, _, _ := s.readLock(ctx, key)
			return nil, lockedError(where, info, raw)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("storage: lock %s: %w%s", where, err, s.hint(err))
	}

	l := &Lock{where: where, owner: owner, lost: make(chan struct{})}
	renewed := time.Now()
	stop, done := make(chan struct{}), make(chan struct{})
	mu := &l.mu
	l.valid = func() error {
		mu.Lock()
		last := renewed
		mu.Unlock()
		if time.Since(last) > lockLease/2 {
			return fmt.Errorf("storage: lock %s not renewed for %s (the S3 server is unreachable?): writing on could clobber a writer that takes it over", where, time.Since(last).Round(time.Second))
		}
		return nil
	}
	go func() {
		defer close(done)
		tick := time.NewTicker(renewEvery())
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			rctx, cancel := context.WithTimeout(context.Background(), lockLease/4)
			tag, err := put(rctx, "", etag)
			cancel()
			switch {
			case err == nil:
				etag = tag
				mu.Lock()
				renewed = time.Now()
				mu.Unlock()
			case isPrecondition(err):
				l.lose(fmt.Errorf("storage: lock %s was taken over by another writer (this one's lease had expired, or the lock was removed)", where))
				return
			case isNotFound(err):
				// If-Match on no object: removed by hand (or a sweep), and free
				// for any writer since.
				l.lose(fmt.Errorf("storage: lock %s was removed while this writer held it (by hand?): another writer may have taken the directory since", where))
				return
			default:
				s.log.Warn("storage: could not renew the writer lock", "lock", where, "err", err)
				if verr := l.valid(); verr != nil {
					l.lose(verr)
					return
				}
			}
		}
	}()
	l.release = func() error {
		close(stop)
		<-done
		// Delete it only while it is still ours: If-Match on the ETag it has, so a
		// writer that takes it over between the read and the DELETE (this lease
		// ended) keeps its lock (S3 since 2024, MinIO; 412 when it is another's). A
		// server that ignores the condition deletes it anyway: the read before
		// narrows that window to one round trip.
		if _, _, held, err := s.readLock(context.Background(), key); err == nil && held == etag {
			_, err := s.client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &key, IfMatch: aws.String(etag)})
			if err != nil && !isNotFound(err) && !isPrecondition(err) && !isConflict(err) {
				return fmt.Errorf("storage: release %s: %w%s", where, err, s.hint(err))
			}
		}
		return nil
	}
	return l, nil
}

// readLock reads the lock object at key: its contents and ETag ("" when there is none).
func (s *s3Store) readLock(ctx context.Context, key string) (lockInfo, []byte, string, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &key})
	if isNotFound(err) {
		return lockInfo{}, nil, "", nil
	}
	if err != nil {
		return lockInfo{}, nil, "", err
	}
	defer out.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(out.Body, 64<<10))
	if err != nil {
		return lockInfo{}, nil, "", err
	}
	var info lockInfo
	json.Unmarshal(raw, &info) // a garbled lock reads as expired
	info.age = -1
	if out.LastModified != nil {
		if now, ok := awsmiddleware.GetServerTime(out.ResultMetadata); ok && !now.IsZero() {
			info.age = now.Sub(*out.LastModified)
		} else {
			info.age = time.Since(*out.LastModified)
		}
	}
	return info, raw, aws.ToString(out.ETag), nil
}

// waitLockEnd waits up to wait for the lock object at key, of ETag held, to end, reading
// it every poll: renewed reports that it changed (renewed, released or taken) meanwhile.
func (s *s3Store) waitLockEnd(ctx context.Context, key, held string, wait, poll time.Duration) (renewed bool, err error) {
	end := time.Now().Add(wait)
	for {
		d := min(time.Until(end), poll)
		if d <= 0 {
			return false, nil
		}
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return false, ctx.Err()
		case <-t.C:
		}
		_, _, now, err := s.readLock(ctx, key)
		if err != nil {
			return false, err
		}
		if now != held {
			return true, nil
		}
	}
}

// renewEvery is how often info's holder renews its lock.
func (info lockInfo) renewEvery() time.Duration {
	if info.RenewEveryMS > 0 {
		return time.Duration(info.RenewEveryMS) * time.Millisecond
	}
	return lockLease / 4 // older versions
}

// staleAfter is how long a lock object goes unwritten before its holder is taken for one
// that stopped renewing: two renewals (a slow PUT may delay one) and the second the
// server's times are rounded to.
func (info lockInfo) staleAfter() time.Duration { return 2*info.renewEvery() + time.Second }

// stale reports whether info's holder has stopped renewing it.
func (info lockInfo) stale() bool { return info.age > info.staleAfter() }

// expired reports whether info's lease has ended: by the server's clock where the lock
// records when it was renewed (how long ago the object was written, against the lease
// it records), as a holder's clock may run behind this writer's; else (an older
// version's lock, or a garbled one, which has ended) by this writer's clock.
func (info lockInfo) expired() bool {
	if info.Renewed.IsZero() || info.age < 0 {
		return !time.Now().Before(info.Expires)
	}
	// The server's times are whole seconds: the age may read a second more than it
	// is (a lease about to end goes through the wait of remaining instead).
	return info.age-time.Second >= info.lease()
}

// lease is the length of info's lease, as its holder recorded it (lockLease for an older
// version's lock).
func (info lockInfo) lease() time.Duration {
	if !info.Renewed.IsZero() && info.Expires.After(info.Renewed) {
		return info.Expires.Sub(info.Renewed)
	}
	return lockLease
}

// remaining is how long info's lease runs on (by the server's clock where it is known),
// at most a whole lease.
func (info lockInfo) remaining() time.Duration {
	lease := info.lease()
	r := time.Until(info.Expires)
	if info.age >= 0 {
		r = lease - info.age
	}
	return max(0, min(r, lease))
}
