// Package miniotest runs a real MinIO server for tests of S3 code paths.
//
// The binary is $MINIO_BIN, else $(go env GOPATH)/bin/minio (tools/install-minio.sh puts
// it there), else minio on $PATH. Without one, tests fail when CI=true and skip otherwise
// (sharedtest.Missing).
//
// Start gives a test its own server (about one second to start). Shared gives every test
// of the binary one server, started on first use; call it from a package whose TestMain
// ends with os.Exit(miniotest.Main(m)), which stops the server after the tests (without
// it the server dies with the test binary on Linux, but its data directory stays in
// $TMPDIR).
package miniotest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"go/build"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"gptkit/internal/freeport"
	"gptkit/internal/sharedtest"
)

// readyTimeout bounds how long Start waits for /minio/health/ready (a loaded
// 2-core machine, a race-detector run beside it, has taken over 20 s).
const readyTimeout = 60 * time.Second

// Server is a running MinIO server.
type Server struct {
	// Endpoint is the server's URL, http://127.0.0.1:PORT.
	Endpoint string
	// AccessKey and SecretKey are the root credentials.
	AccessKey, SecretKey string
	// Region is the region clients should use.
	Region string

	cmd     *exec.Cmd
	dataDir string
	out     *syncBuffer
	exited  chan struct{}
	stopped sync.Once
}

// Start starts a MinIO server for this test and stops it at tb.Cleanup. It skips (or, with
// CI=true, fails) the test when no MinIO binary is installed.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin := Binary()
	if bin == "" {
		sharedtest.Missing(tb, "MinIO server binary (run tools/install-minio.sh, or set MINIO_BIN)")
	}
	s, err := start(bin, tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

var shared struct {
	once sync.Once
	srv  *Server
	dir  string
	err  error
}

// Shared returns the test binary's shared server, starting it on first use; see the
// package comment for stopping it. It skips or fails like Start.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	bin := Binary()
	if bin == "" {
		sharedtest.Missing(tb, "MinIO server binary (run tools/install-minio.sh, or set MINIO_BIN)")
	}
	shared.once.Do(func() {
		shared.dir, shared.err = os.MkdirTemp("", "miniotest-")
		if shared.err == nil {
			shared.srv, shared.err = start(bin, shared.dir)
		}
	})
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.srv
}

// Main runs the tests and then stops the shared server, if one was started, and removes
// its data. Use it as os.Exit(miniotest.Main(m)) in TestMain.
func Main(m *testing.M) int {
	code := m.Run()
	if shared.srv != nil {
		shared.srv.Stop()
	}
	if shared.dir != "" {
		os.RemoveAll(shared.dir)
	}
	return code
}

// Binary returns the MinIO binary tests would run, or "" if none is installed.
func Binary() string {
	if b := os.Getenv("MINIO_BIN"); b != "" {
		if _, err := os.Stat(b); err == nil {
			return b
		}
		return ""
	}
	if gp := goPath(); gp != "" {
		b := filepath.Join(gp, "bin", "minio")
		if _, err := os.Stat(b); err == nil {
			return b
		}
	}
	if b, err := exec.LookPath("minio"); err == nil {
		return b
	}
	return ""
}

// goPath is the first element of `go env GOPATH`, else the default GOPATH.
var goPath = sync.OnceValue(func() string {
	out, err := exec.Command("go", "env", "GOPATH").Output()
	gp := strings.TrimSpace(string(out))
	if err != nil || gp == "" {
		gp = build.Default.GOPATH
	}
	if gp == "" {
		return ""
	}
	return filepath.SplitList(gp)[0]
})

func start(bin, dir string) (*Server, error) {
	var err error
	for range 3 { // a port taken between probing and MinIO's bind is retried
		var s *Server
		if s, err = startOnce(bin, dir); err == nil {
			return s, nil
		}
		if !strings.Contains(err.Error(), "address already in use") {
			break
		}
	}
	return nil, err
}

func startOnce(bin, dir string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cport, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	s := &Server{
		Endpoint:  "http://" + addr,
		AccessKey: "minioadmin",
		SecretKey: "minioadmin-" + randHex(8),
		Region:    "us-east-1",
		dataDir:   filepath.Join(dir, "data"),
		out:       new(syncBuffer),
		exited:    make(chan struct{}),
	}
	cmd := exec.Command(bin, "server", s.dataDir, "--address", addr,
		"--console-address", fmt.Sprintf("127.0.0.1:%d", cport), "--quiet")
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+s.AccessKey, "MINIO_ROOT_PASSWORD="+s.SecretKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_REGION="+s.Region)
	cmd.Stdout, cmd.Stderr = s.out, s.out
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("miniotest: start %s: %w", bin, err)
	}
	s.cmd = cmd
	go func() { cmd.Wait(); close(s.exited) }()

	deadline := time.Now().Add(readyTimeout)
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get(s.Endpoint + "/minio/health/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		select {
		case <-s.exited:
			return nil, fmt.Errorf("miniotest: %s exited before it was ready (%v); its output:\n%s", bin, cmd.ProcessState, s.out)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("miniotest: %s not ready at %s after %v; its output:\n%s", bin, s.Endpoint, readyTimeout, s.out)
		}
	}
}

// Stop stops the server (SIGTERM, then SIGKILL after 10 s). Start registers it with
// tb.Cleanup; calling it again does nothing.
func (s *Server) Stop() {
	s.stopped.Do(func() {
		s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			s.cmd.Process.Kill()
			<-s.exited
		}
	})
}

// Client returns an S3 client for the server, with path-style addressing.
func (s *Server) Client() *s3.Client {
	return s3.New(s3.Options{
		BaseEndpoint: aws.String(s.Endpoint),
		Region:       s.Region,
		Credentials:  credentials.NewStaticCredentialsProvider(s.AccessKey, s.SecretKey, ""),
		UsePathStyle: true,
	})
}

var bucketSeq atomic.Int64

// NewBucket creates a bucket with a unique name and returns the name.
func (s *Server) NewBucket(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("test-%d-%s", bucketSeq.Add(1), randHex(4))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := s.Client().CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		tb.Fatalf("miniotest: create bucket %s at %s: %v", name, s.Endpoint, err)
	}
	return name
}

// Env returns the environment variables that point the AWS SDK's standard chain at the
// server, for subprocesses: credentials, AWS_ENDPOINT_URL_S3, AWS_REGION, and
// AWS_EC2_METADATA_DISABLED (no instance-metadata lookups).
func (s *Server) Env() []string {
	return []string{
		"AWS_ACCESS_KEY_ID=" + s.AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.SecretKey,
		"AWS_ENDPOINT_URL_S3=" + s.Endpoint,
		"AWS_REGION=" + s.Region,
		"AWS_EC2_METADATA_DISABLED=true",
	}
}

// Setenv sets Env's variables for the rest of the test (t.Setenv, so not in parallel
// tests), for code that opens stores in-process.
func (s *Server) Setenv(tb testing.TB) {
	tb.Helper()
	t, ok := tb.(interface{ Setenv(k, v string) })
	if !ok {
		tb.Fatalf("miniotest: Setenv needs a *testing.T or *testing.B, got %T", tb)
	}
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

func freePort() (int, error) {
	p, err := freeport.One()
	if err != nil {
		return 0, fmt.Errorf("miniotest: %w", err)
	}
	return p, nil
}

func randHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// syncBuffer collects the server's output for error messages.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<20 {
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
