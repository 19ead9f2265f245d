package fetch

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// TestResumedPartKeepsIfRangeOnRetries resumes a .part left by an earlier run:
// the first answer is a 206, which is cut; the retry must ask If-Range with that
// answer's ETag, so that a file changed between the two is sent whole, not spliced.
func TestResumedPartKeepsIfRangeOnRetries(t *testing.T) {
	content := randomBytes(1<<20, 7)
	const kept, cut = 100_000, 200_000
	srv := newTestServer(t, map[string][]byte{"/data": content})
	var (
		mu       sync.Mutex
		ifRanges []string
	)
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		mu.Lock()
		ifRanges = append(ifRanges, r.Header.Get("If-Range"))
		mu.Unlock()
		w.Header().Set("ETag", `"v1"`)
		if n == 0 {
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", kept, len(content)-1, len(content)))
			w.Header().Set("Content-Length", fmt.Sprint(len(content)-kept))
			w.WriteHeader(http.StatusPartialContent)
			w.Write(content[kept:cut])
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		}
		return false
	})
	dest := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(dest+".part", content[:kept], 0o644); err != nil {
		t.Fatal(err)
	}
	f := File{URLs: []string{srv.URL + "/data"}, Dest: dest, Size: int64(len(content)), SHA256: sha(content)}
	if err := FetchOne(context.Background(), f, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	wantFile(t, dest, content)
	if want := []string{"", `"v1"`}; !slices.Equal(ifRanges, want) {
		t.Errorf("If-Range of the requests %q, want %q", ifRanges, want)
	}
}

// TestRetryBudgetAfterStartingOver: a .part of an earlier run that the server does not
// resume (it answers every request with the whole file, cut short) is dropped; from
// then on progress counts from byte 0, not from the dropped part's length: each attempt
// that gets further than the one before is progress, and the download completes
// within a budget of two retries in a row without progress.
func TestRetryBudgetAfterStartingOver(t *testing.T) {
	content := randomBytes(1<<20, 11)
	const step = 150_000
	srv := newTestServer(t, map[string][]byte{"/data": content})
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		w.Header().Set("Content-Length", fmt.Sprint(len(content)))
		w.WriteHeader(http.StatusOK) // no ranges: the whole file every time
		end := min((n+1)*step, len(content))
		w.Write(content[:end])
		if end < len(content) {
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler)
		}
		return true
	})
	dest := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(dest+".part", content[:900_000], 0o644); err != nil {
		t.Fatal(err)
	}
	opt := fastOptions(t)
	opt.Retries = 2
	f := File{URLs: []string{srv.URL + "/data"}, Dest: dest, Size: int64(len(content)), SHA256: sha(content)}
	if err := FetchOne(context.Background(), f, opt); err != nil {
		t.Fatal(err)
	}
	wantFile(t, dest, content)
}

// TestRetryBudgetWhenAlwaysStartingOver: a server that sends the whole file every time
// and always cuts it at the same byte makes no progress after the first start over:
// it is given up on after the budget.
func TestRetryBudgetWhenAlwaysStartingOver(t *testing.T) {
	content := randomBytes(1<<20, 12)
	srv := newTestServer(t, map[string][]byte{"/data": content})
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		w.Header().Set("Content-Length", fmt.Sprint(len(content)))
		w.WriteHeader(http.StatusOK)
		w.Write(content[:100_000])
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	})
	dest := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(dest+".part", content[:500_000], 0o644); err != nil {
		t.Fatal(err)
	}
	opt := fastOptions(t)
	opt.Retries = 2
	f := File{URLs: []string{srv.URL + "/data"}, Dest: dest, Size: int64(len(content)), SHA256: sha(content)}
	errorContains(t, FetchOne(context.Background(), f, opt), "gave up after 3 attempts")
	if got := len(srv.log()); got != 3 {
		t.Errorf("%d requests, want 3 (the first start over, then two without progress)", got)
	}
}
