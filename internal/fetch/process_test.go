package fetch

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Helper processes: the test binary re-runs itself with helperEnv set to run one
// FetchOne (from helperURL to helperDest, expecting helperSHA) and exit, so that tests
// can use a fresh environment (proxies) or a second process (locks, kills).
const (
	helperEnv  = "GPTKIT_FETCH_TEST_HELPER"
	helperURL  = "GPTKIT_FETCH_TEST_URL"
	helperDest = "GPTKIT_FETCH_TEST_DEST"
	helperSHA  = "GPTKIT_FETCH_TEST_SHA256"
)

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		f := File{URLs: []string{os.Getenv(helperURL)}, Dest: os.Getenv(helperDest), SHA256: os.Getenv(helperSHA)}
		if err := FetchOne(context.Background(), f, Options{Backoff: time.Millisecond}); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// helper returns a command running FetchOne in a new process, with env added to an
// environment cleared of proxy settings.
func helper(t *testing.T, url, dest, sum string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch strings.ToUpper(name) {
		case "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY", "REQUEST_METHOD":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	cmd.Env = append(cmd.Env, helperEnv+"=1", helperURL+"="+url, helperDest+"="+dest, helperSHA+"="+sum)
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// The default client takes its proxy from the environment. http.ProxyFromEnvironment
// reads the environment once per process and never proxies localhost or loopback
// addresses, so the download runs in a fresh process, from a host name that only the
// proxy knows (.test is reserved and never resolves).
func TestProxyFromEnvironment(t *testing.T) {
	content := randomBytes(50_000, 20)
	var mu sync.Mutex
	var seen []string
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Method+" "+r.URL.String())
		mu.Unlock()
		if r.URL.Host != "example.test" || r.URL.Path != "/data" {
			http.NotFound(w, r)
			return
		}
		w.Write(content)
	}))
	t.Cleanup(proxy.Close)
	dest := filepath.Join(t.TempDir(), "data")
	out, err := helper(t, "http://example.test/data", dest, sha(content), "HTTP_PROXY="+proxy.URL, "http_proxy="+proxy.URL).CombinedOutput()
	if err != nil {
		t.Fatalf("helper: %v\n%s", err, out)
	}
	wantFile(t, dest, content)
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"GET http://example.test/data"}; !slices.Equal(seen, want) {
		t.Errorf("proxy saw %v, want %v", seen, want)
	}
}

func TestKilledProcessLeavesNoFile(t *testing.T) {
	content := randomBytes(1<<20, 21)
	half := len(content) / 2
	srv := newTestServer(t, map[string][]byte{"/data": content})
	sentHalf := make(chan struct{})
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		if n == 0 {
			w.Header().Set("Content-Length", strconv.Itoa(len(content)))
			w.Write(content[:half])
			http.NewResponseController(w).Flush()
			close(sentHalf)
			<-r.Context().Done()
			return true
		}
		return false
	})
	dest := filepath.Join(t.TempDir(), "data")
	cmd := helper(t, srv.URL+"/data", dest, sha(content))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	select {
	case <-sentHalf:
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("the helper never started downloading")
	}
	// Wait until the helper has written the half it got, then kill it mid-download.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if info, err := os.Stat(dest + ".part"); err == nil && info.Size() == int64(half) {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			t.Fatal("the helper never wrote the first half")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no chance to clean up
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Fatal("the helper exited cleanly; want killed")
	}
	noFile(t, dest)
	// The lock died with the process (its file stays), and the next run resumes.
	if err := FetchOne(context.Background(), File{URLs: []string{srv.URL + "/data"}, Dest: dest, SHA256: sha(content)}, fastOptions(t)); err != nil {
		t.Fatal(err)
	}
	wantFile(t, dest, content)
	if got, want := srv.log(), []string{"/data", "/data bytes=" + strconv.Itoa(half) + "-"}; !slices.Equal(got, want) {
		t.Errorf("requests %v, want %v", got, want)
	}
}

func TestConcurrentProcessesDownloadOnce(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "darwin" {
		t.Skip("the lock uses flock")
	}
	content := randomBytes(300_000, 22)
	srv := newTestServer(t, map[string][]byte{"/data": content})
	srv.setServe(func(w http.ResponseWriter, r *http.Request, n int, content []byte) bool {
		time.Sleep(300 * time.Millisecond) // long enough for the other process to queue
		return false
	})
	dest := filepath.Join(t.TempDir(), "data")
	cmds := []*exec.Cmd{helper(t, srv.URL+"/data", dest, sha(content)), helper(t, srv.URL+"/data", dest, sha(content))}
	outs := make([][]byte, len(cmds))
	errs := make([]error, len(cmds))
	var wg sync.WaitGroup
	for i, cmd := range cmds {
		wg.Go(func() { outs[i], errs[i] = cmd.CombinedOutput() })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("helper %d: %v\n%s", i, err, outs[i])
		}
	}
	wantFile(t, dest, content)
	if got := srv.log(); len(got) != 1 {
		t.Errorf("requests %v, want one", got)
	}
}
