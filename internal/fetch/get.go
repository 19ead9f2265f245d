package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"gptkit/internal/redact"
)

// Get returns the body of a small resource (a checksum list) at url, read into
// memory: at most limit bytes, else an error. It tries up to three times, a second
// apart, when the network or the server fails transiently; a try that waits
// getStallTimeout for the answer or for its next bytes fails (a hung server costs
// under a minute, not the three of the client's 60 s header timeout, which suits a
// large download's slow start, not a small text file). Other non-2xx answers are
// a *StatusError, which errors.Is(err, ErrNotFound) for 403, 404 and 410. A nil
// client means DefaultClient().
func Get(ctx context.Context, client *http.Client, url string, limit int64) ([]byte, error) {
	if client == nil {
		client = DefaultClient()
	}
	var err error
	for attempt := 1; attempt <= 3; attempt++ {
		var data []byte
		data, err = getOnce(ctx, client, url, limit)
		if err == nil {
			return data, nil
		}
		var status *StatusError
		var perm permanentError
		if ctx.Err() != nil || errors.As(err, &perm) || (errors.As(err, &status) && !status.transient()) {
			break
		}
		if attempt < 3 {
			timer := time.NewTimer(time.Second)
			select {
			case <-ctx.Done():
				timer.Stop()
			case <-timer.C:
			}
		}
	}
	return nil, fmt.Errorf("fetch: get %s: %w", redact.URL(url), err)
}

// getStallTimeout is how long a try of Get waits for the answer, or for the next bytes
// of its body, before it fails (a variable for the tests).
var getStallTimeout = 15 * time.Second

// errGetStalled ends a try of Get that waited getStallTimeout.
var errGetStalled = errors.New("stalled")

// getOnce makes one request for Get.
func getOnce(ctx context.Context, client *http.Client, url string, limit int64) ([]byte, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stall := getStallTimeout
	timer := time.AfterFunc(stall, func() { cancel(errGetStalled) })
	defer timer.Stop()
	data, err := getBody(ctx, client, url, limit, func() { timer.Reset(stall) })
	if err != nil && errors.Is(context.Cause(ctx), errGetStalled) {
		return nil, fmt.Errorf("the server sent nothing for %v (a small file: it should come at once): %w", stall, err)
	}
	return data, err
}

// getBody is getOnce's request; progress is called as bytes arrive.
func getBody(ctx context.Context, client *http.Client, url string, limit int64, progress func()) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, permanentError{err}
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return nil, &StatusError{Code: resp.StatusCode, Status: resp.Status}
	}
	progress()
	data, err := io.ReadAll(io.LimitReader(progressReader{resp.Body, progress}, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, permanentError{fmt.Errorf("larger than %d bytes", limit)}
	}
	return data, nil
}

// progressReader calls progress after each read that returns bytes.
type progressReader struct {
	r        io.Reader
	progress func()
}

func (p progressReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	if n > 0 {
		p.progress()
	}
	return n, err
}
