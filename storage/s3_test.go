package storage

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"gptkit/internal/miniotest"
)

func TestS3UsesMultipartAboveThePartSize(t *testing.T) {
	counts, hc := newCountingClient()
	st := minioStore(t, Options{HTTPClient: hc})
	for _, c := range []struct {
		size          int
		parts, puts   int64
		multipartUsed bool
	}{
		{0, 0, 1, false},
		{MinPartSize, 0, 1, false}, // exactly one part: a single PutObject
		{MinPartSize + 1, 2, 0, true},
		{3*MinPartSize + 7, 4, 0, true},
	} {
		before := map[string]int64{}
		for k := range counts.counts {
			before[k] = counts.n(k)
		}
		data := randBytes(c.size, uint64(c.size))
		put(t, st, "obj", data, IfAbsent())
		d := func(k string) int64 { return counts.n(k) - before[k] }
		if d("UploadPart") != c.parts || d("PUT") != c.puts || (d("CreateMultipartUpload") == 1) != c.multipartUsed ||
			(d("CompleteMultipartUpload") == 1) != c.multipartUsed {
			t.Errorf("size %d: PutObject %d, CreateMultipartUpload %d, UploadPart %d, CompleteMultipartUpload %d; want %d puts, %d parts",
				c.size, d("PUT"), d("CreateMultipartUpload"), d("UploadPart"), d("CompleteMultipartUpload"), c.puts, c.parts)
		}
		sameBytes(t, "obj", get(t, st, "obj"), data)
		if err := st.Delete(ctx, "obj"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestS3FailedCommitAbortsUpload cancels the writer's context mid-upload: Commit fails,
// and the multipart upload is aborted anyway (on a detached context).
func TestS3FailedCommitAbortsUpload(t *testing.T) {
	counts, hc := newCountingClient()
	st := minioStore(t, Options{HTTPClient: hc})
	cctx, cancel := context.WithCancel(ctx)
	w, err := st.Create(cctx, "cancelled")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(randBytes(2*MinPartSize+1, 1)); err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := w.Commit(); !errors.Is(err, context.Canceled) {
		t.Fatalf("Commit after cancel: %v, want context.Canceled", err)
	}
	if counts.n("AbortMultipartUpload") != 1 {
		t.Fatalf("%d AbortMultipartUpload requests, want 1", counts.n("AbortMultipartUpload"))
	}
	assertNoLeftovers(t, st, "cancelled")
	if _, err := st.Stat(ctx, "cancelled"); !errors.Is(err, ErrNotExist) {
		t.Fatalf("Stat: %v, want ErrNotExist", err)
	}
}

func TestS3ObjectChangedWhileReading(t *testing.T) {
	st := minioStore(t, Options{})
	put(t, st, "k", []byte("version one"))
	o, err := st.Open(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	put(t, st, "k", []byte("version two"))
	_, err = o.ReadAt(make([]byte, 4), 0)
	if err == nil || !strings.Contains(err.Error(), "changed since Open") {
		t.Fatalf("ReadAt of a replaced object: %v, want a 'changed since Open' error", err)
	}
}

// breakingTransport cuts the first n GET response bodies short with an error after
// cutAt bytes.
type breakingTransport struct {
	n      atomic.Int64
	cutAt  atomic.Int64
	broken atomic.Int64
}

func (b *breakingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err == nil && r.Method == "GET" && r.URL.Query().Get("list-type") == "" && b.n.Add(-1) >= 0 {
		resp.Body = &cutBody{ReadCloser: resp.Body, left: b.cutAt.Load()}
		b.broken.Add(1)
	}
	return resp, err
}

type cutBody struct {
	io.ReadCloser
	left int64
}

func (c *cutBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, errors.New("connection reset by test")
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.ReadCloser.Read(p)
	c.left -= int64(n)
	return n, err
}

func TestS3ReadResumesBrokenStream(t *testing.T) {
	bt := &breakingTransport{}
	bt.cutAt.Store(100_000)
	bt.n.Store(2)
	st := minioStore(t, Options{HTTPClient: &http.Client{Transport: bt}})
	data := randBytes(1<<20, 3)
	put(t, st, "r", data)
	sameBytes(t, "read through two broken connections", get(t, st, "r"), data)
	if bt.broken.Load() != 2 {
		t.Fatalf("%d bodies broken, want 2", bt.broken.Load())
	}
	// Connections that break before delivering a byte: Read gives up after a few.
	bt.cutAt.Store(0)
	bt.n.Store(100)
	o, err := st.Open(ctx, "r")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if _, err := io.ReadAll(o); err == nil || !strings.Contains(err.Error(), "connection reset by test") {
		t.Fatalf("ReadAll through endless breaks: %v, want the transport's error", err)
	}
}

func TestS3OpenErrors(t *testing.T) {
	srv := miniotest.Shared(t)
	srv.Setenv(t)
	bucket := srv.NewBucket(t)
	for _, c := range []struct {
		name, loc string
		opt       Options
		env       map[string]string
		want      string
	}{
		{"no bucket", "s3://", Options{}, nil, "no bucket"},
		{"bad prefix", "s3://b/a/../c", Options{}, nil, "bad prefix"},
		{"small parts", "s3://" + bucket, Options{PartSize: 1 << 20}, nil, "below S3's minimum"},
		{"endpoint not a URL", "s3://" + bucket, Options{S3Endpoint: "127.0.0.1:9"}, nil, "not a URL"},
		{"nothing listens", "s3://" + bucket, Options{S3Endpoint: "http://127.0.0.1:9"}, nil, "cannot reach the S3 endpoint http://127.0.0.1:9"},
		{"missing bucket", "s3://no-such-bucket-here", Options{}, nil, `bucket "no-such-bucket-here" does not exist at ` + srv.Endpoint},
		{"unsupported scheme", "gs://b/p", Options{}, nil, "unsupported scheme"},
		{"empty", "", Options{}, nil, "empty location"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Open(ctx, c.loc, c.opt)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Open(%q): %v, want an error containing %q", c.loc, err, c.want)
			}
		})
	}
}

func TestS3WrongCredentials(t *testing.T) {
	srv := miniotest.Shared(t)
	srv.Setenv(t)
	bucket := srv.NewBucket(t)
	const secret = "wrong-secret-value"
	t.Setenv("AWS_SECRET_ACCESS_KEY", secret)
	st, err := Open(ctx, "s3://"+bucket, Options{}) // HeadBucket's 403 only warns
	if err != nil {
		t.Fatal(err)
	}
	_, err = st.Stat(ctx, "k")
	if err == nil || !strings.Contains(err.Error(), "check the credentials") {
		t.Fatalf("Stat with a wrong secret: %v, want a credentials hint", err)
	}
	err = tryPut(st, "k", []byte("x"))
	if err == nil || !strings.Contains(err.Error(), "check the credentials") {
		t.Fatalf("Commit with a wrong secret: %v, want a credentials hint", err)
	}
	if strings.Contains(err.Error(), secret) {
		t.Fatalf("the error shows the secret: %v", err)
	}
}

func TestS3LocalhostUsesPathStyle(t *testing.T) {
	srv := miniotest.Shared(t)
	srv.Setenv(t)
	bucket := srv.NewBucket(t)
	ep := strings.Replace(srv.Endpoint, "127.0.0.1", "localhost", 1)
	st, err := Open(ctx, "s3://"+bucket+"/p/", Options{S3Endpoint: ep})
	if err != nil {
		t.Fatal(err)
	}
	put(t, st, "k", []byte("x"))
	if got := listKeys(t, st, ""); got != "k" {
		t.Fatalf("List = %q", got)
	}
	if st.String() != "s3://"+bucket+"/p" {
		t.Fatalf("String = %s", st.String())
	}
	if _, ok := st.LocalPath("k"); ok {
		t.Fatal("an S3 store has a LocalPath")
	}
}
