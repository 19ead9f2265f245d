package storage

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"gptkit/internal/miniotest"
)

// helperEnv selects a helper mode when the test binary re-executes itself (crash_test.go).
const helperEnv = "GPTKIT_STORAGE_TEST_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	os.Exit(miniotest.Main(m))
}

// storeCase opens a fresh, empty store of one kind.
type storeCase struct {
	name string
	open func(t testing.TB, opt Options) (Store, string) // the store and its location
}

var storeCases = []storeCase{
	{"dir", func(t testing.TB, opt Options) (Store, string) {
		loc := t.TempDir()
		return mustOpen(t, loc, opt), loc
	}},
	{"minio", func(t testing.TB, opt Options) (Store, string) {
		srv := miniotest.Shared(t)
		srv.Setenv(t)
		loc := "s3://" + srv.NewBucket(t) + "/some/prefix"
		if opt.PartSize == 0 {
			opt.PartSize = MinPartSize
		}
		return mustOpen(t, loc, opt), loc
	}},
}

// forEachStore runs f against a fresh store of each kind; the MinIO case is skipped (failed
// with CI=true) when no MinIO binary is installed.
func forEachStore(t *testing.T, f func(t *testing.T, st Store)) {
	for _, c := range storeCases {
		t.Run(c.name, func(t *testing.T) {
			st, _ := c.open(t, Options{})
			f(t, st)
		})
	}
}

func mustOpen(t testing.TB, loc string, opt Options) Store {
	t.Helper()
	st, err := Open(context.Background(), loc, opt)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// randBytes returns n deterministic pseudo-random bytes.
func randBytes(n int, seed uint64) []byte {
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16)})
	b := make([]byte, n)
	r.Read(b)
	return b
}

// put writes data under key and commits it, failing the test on error.
func put(t testing.TB, st Store, key string, data []byte, opts ...WriteOption) {
	t.Helper()
	if err := tryPut(st, key, data, opts...); err != nil {
		t.Fatal(err)
	}
}

func tryPut(st Store, key string, data []byte, opts ...WriteOption) error {
	w, err := st.Create(context.Background(), key, opts...)
	if err != nil {
		return err
	}
	defer w.Abort()
	// Odd chunk sizes exercise part boundaries.
	for len(data) > 0 {
		n := min(len(data), 777_777)
		if _, err := w.Write(data[:n]); err != nil {
			return err
		}
		data = data[n:]
	}
	return w.Commit()
}

// get reads key whole through Read.
func get(t testing.TB, st Store, key string) []byte {
	t.Helper()
	o, err := st.Open(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(b)) != o.Size() {
		t.Fatalf("%s: read %d bytes, Size %d", key, len(b), o.Size())
	}
	return b
}

func listKeys(t testing.TB, st Store, prefix string) string {
	t.Helper()
	infos, err := st.List(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, i := range infos {
		keys = append(keys, i.Key)
	}
	return strings.Join(keys, " ")
}

func sameBytes(t testing.TB, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		i := 0
		for i < len(got) && i < len(want) && got[i] == want[i] {
			i++
		}
		t.Fatalf("%s: got %d bytes, want %d; first difference at %d", what, len(got), len(want), i)
	}
}

// countingClient counts S3 requests by kind: "GET", "HEAD", "CreateMultipartUpload",
// "UploadPart", "CompleteMultipartUpload", "PUT", "AbortMultipartUpload".
type countingClient struct {
	counts map[string]*atomic.Int64
}

func newCountingClient() (*countingClient, *http.Client) {
	c := &countingClient{counts: map[string]*atomic.Int64{}}
	for _, k := range []string{"GET", "HEAD", "PUT", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload", "AbortMultipartUpload", "other"} {
		c.counts[k] = new(atomic.Int64)
	}
	return c, &http.Client{Transport: c}
}

func (c *countingClient) RoundTrip(r *http.Request) (*http.Response, error) {
	q := r.URL.Query()
	kind := "other"
	switch {
	case r.Method == "POST" && q.Has("uploads"):
		kind = "CreateMultipartUpload"
	case r.Method == "PUT" && q.Has("partNumber"):
		kind = "UploadPart"
	case r.Method == "POST" && q.Has("uploadId"):
		kind = "CompleteMultipartUpload"
	case r.Method == "DELETE" && q.Has("uploadId"):
		kind = "AbortMultipartUpload"
	case r.Method == "GET" && !q.Has("list-type") && !q.Has("uploads"):
		kind = "GET"
	case r.Method == "HEAD" || r.Method == "PUT":
		kind = r.Method
	}
	c.counts[kind].Add(1)
	return http.DefaultTransport.RoundTrip(r)
}

func (c *countingClient) n(kind string) int64 { return c.counts[kind].Load() }
