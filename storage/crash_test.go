package storage

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Helper modes, run by the re-executed test binary (TestMain): the store is
// $HELPER_LOCATION (S3 settings from the environment).
//
//	crash: write 12 MiB of KEY (three parts on S3), print "ready", wait to be killed.
//	incr:  increment the counter at KEY $HELPER_N times.
//	lock:  take the writer lock of directory KEY (S3 lease $HELPER_LEASE), print "ready",
//	       wait to be killed.
func runHelper(mode string) int {
	ctx := context.Background()
	st, err := Open(ctx, os.Getenv("HELPER_LOCATION"), Options{PartSize: MinPartSize})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	key := os.Getenv("HELPER_KEY")
	switch mode {
	case "crash":
		w, err := st.Create(ctx, key)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if _, err := w.Write(randBytes(12<<20, 1)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		if sw, ok := w.(*s3Writer); ok {
			sw.wg.Wait() // the parts are on the server
		}
		fmt.Println("ready")
		time.Sleep(time.Hour)
	case "lock":
		if d, err := time.ParseDuration(os.Getenv("HELPER_LEASE")); err == nil {
			lockLease = d
		}
		if _, err := LockDir(ctx, st, key, "the helper"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("ready")
		time.Sleep(time.Hour)
	case "incr":
		n, _ := strconv.Atoi(os.Getenv("HELPER_N"))
		for range n {
			if err := increment(ctx, st, key); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		return 0
	}
	fmt.Fprintf(os.Stderr, "unknown helper mode %q\n", mode)
	return 2
}

// startHelper starts a helper that says "ready" (crash, lock) and waits until it has.
func startHelper(t *testing.T, mode, loc, key string, env ...string) *exec.Cmd {
	t.Helper()
	cmd := helperCmd(t, mode, loc, key, env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper: %q, %v", line, err)
	}
	return cmd
}

func helperCmd(t *testing.T, mode, loc, key string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+mode, "HELPER_LOCATION="+loc, "HELPER_KEY="+key)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	return cmd
}

// TestCrashBeforeCommit SIGKILLs a writer halfway through an object: nothing may be
// visible under the key. What the crash leaves (a temp file; parts of a multipart upload)
// is invisible, and Sweep removes it.
func TestCrashBeforeCommit(t *testing.T) {
	for _, c := range storeCases {
		t.Run(c.name, func(t *testing.T) {
			st, loc := c.open(t, Options{})
			cmd := helperCmd(t, "crash", loc, "shards/00001.bin")
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || line != "ready\n" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("helper: %q, %v", line, err)
			}
			cmd.Process.Kill()
			cmd.Wait()

			if _, err := st.Stat(ctx, "shards/00001.bin"); !errors.Is(err, ErrNotExist) {
				t.Fatalf("Stat after crash: %v, want ErrNotExist", err)
			}
			if got := listKeys(t, st, ""); got != "" {
				t.Fatalf("List after crash = %q, want nothing", got)
			}
			const key = "shards/00001.bin"
			if n := leftovers(t, st, key); n == 0 {
				t.Fatal("the crash left nothing to sweep; did the helper write?")
			}
			if n, err := Sweep(ctx, st, key, time.Hour); err != nil || n != 0 {
				t.Fatalf("Sweep(1h) = %d, %v; want 0 (the leftover is younger)", n, err)
			}
			if n, err := Sweep(ctx, st, "other", 0); err != nil || n != 0 {
				t.Fatalf("Sweep(other prefix) = %d, %v; want 0", n, err)
			}
			// MinIO lists uploads only by exact key; a directory store takes any prefix.
			n, err := Sweep(ctx, st, key, 0)
			if err != nil {
				t.Fatal(err)
			}
			if n != 1 {
				t.Fatalf("Sweep removed %d leftovers, want 1", n)
			}
			assertNoLeftovers(t, st, key)
		})
	}
}

// TestConcurrentIncrementsAcrossProcesses checks that conditional commits exclude each
// other across processes (flock for the directory store).
func TestConcurrentIncrementsAcrossProcesses(t *testing.T) {
	for _, c := range storeCases {
		t.Run(c.name, func(t *testing.T) {
			st, loc := c.open(t, Options{})
			const procs, each = 4, 10
			var wg sync.WaitGroup
			errs := make([]error, procs)
			for i := range procs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					errs[i] = helperCmd(t, "incr", loc, "counter", "HELPER_N="+strconv.Itoa(each)).Run()
				}()
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatal(err)
			}
			if got := string(get(t, st, "counter")); got != strconv.Itoa(procs*each) {
				t.Fatalf("counter = %s, want %d", got, procs*each)
			}
		})
	}
}

// leftovers counts what failed writers of keys left: temp files of a directory store,
// multipart uploads of an S3 store (listed per key: MinIO lists uploads by exact key only).
func leftovers(t testing.TB, st Store, keys ...string) int {
	t.Helper()
	n := 0
	switch s := st.(type) {
	case *dirStore:
		err := filepath.WalkDir(s.root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && isTempName(d.Name()) && slices.Contains(keys, tempKey(s.root, p)) {
				n++
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	case *s3Store:
		for _, k := range keys {
			out, err := s.client.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: &s.bucket, Prefix: aws.String(s.objectKey(k))})
			if err != nil {
				t.Fatal(err)
			}
			n += len(out.Uploads)
		}
	default:
		t.Fatalf("leftovers: unknown store %T", st)
	}
	return n
}

func assertNoLeftovers(t testing.TB, st Store, keys ...string) {
	t.Helper()
	if n := leftovers(t, st, keys...); n != 0 {
		t.Fatalf("%d temp files or multipart uploads left behind", n)
	}
}
