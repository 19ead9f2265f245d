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
// apart, when the network or the server fails transiently. Other non-2xx answers are
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

// getOnce makes one request for Get.
func getOnce(ctx context.Context, client *http.Client, url string, limit int64) ([]byte, error) {
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
	data, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, permanentError{fmt.Errorf("larger than %d bytes", limit)}
	}
	return data, nil
}
