package fetch

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

// sizeTimeout bounds RemoteSize: it only informs a plan printed before a download.
const sizeTimeout = 10 * time.Second

// RemoteSize asks the server at url for the size of the resource with one HEAD request
// (no retry, at most 10 s), following redirects. A server that does not say
// (no Content-Length) gives -1 and no error. A nil client means DefaultClient().
func RemoteSize(ctx context.Context, client *http.Client, url string) (int64, error) {
	if client == nil {
		client = DefaultClient()
	}
	ctx, cancel := context.WithTimeout(ctx, sizeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, url, nil)
	if err != nil {
		return 0, fmt.Errorf("fetch: size of %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, fmt.Errorf("fetch: size of %s: %w", url, err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return 0, fmt.Errorf("fetch: size of %s: %w", url, &StatusError{Code: resp.StatusCode, Status: resp.Status})
	}
	return resp.ContentLength, nil
}
