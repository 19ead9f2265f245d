package storage

// The conformance suite: every Store implementation must pass these (forEachStore).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strconv"
	"sync"
	"testing"
)

var ctx = context.Background()

func TestRoundTrip(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		for _, size := range []int{0, 1, 1000, 3<<20 + 17} {
			key := fmt.Sprintf("rt/obj-%d.bin", size)
			data := randBytes(size, uint64(size))
			put(t, st, key, data)
			sameBytes(t, key+" Read", get(t, st, key), data)

			o, err := st.Open(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if o.Size() != int64(size) {
				t.Fatalf("%s: Size %d, want %d", key, o.Size(), size)
			}
			// ReadAt: inside, at the end (short read → io.EOF), past the end.
			for _, r := range [][2]int{{0, 10}, {size / 3, 1000}, {size - 5, 10}, {size, 4}, {size + 10, 4}} {
				off, n := r[0], r[1]
				if off < 0 {
					continue
				}
				buf := make([]byte, n)
				got, err := o.ReadAt(buf, int64(off))
				wantN := max(0, min(n, size-off))
				if got != wantN {
					t.Fatalf("%s: ReadAt(%d, %d) = %d bytes, want %d (err %v)", key, n, off, got, wantN, err)
				}
				if wantN < n && err != io.EOF {
					t.Fatalf("%s: short ReadAt(%d, %d) err = %v, want io.EOF", key, n, off, err)
				}
				if wantN == n && err != nil {
					t.Fatalf("%s: ReadAt(%d, %d): %v", key, n, off, err)
				}
				if got > 0 {
					sameBytes(t, fmt.Sprintf("%s ReadAt(%d,%d)", key, n, off), buf[:got], data[off:off+got])
				}
			}
			o.Close()

			info, err := st.Stat(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if info.Key != key || info.Size != int64(size) || info.ETag == "" || info.ModTime.IsZero() {
				t.Fatalf("Stat(%s) = %+v", key, info)
			}
			list, err := st.List(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 1 || list[0].ETag != info.ETag || list[0].Size != info.Size {
				t.Fatalf("List(%s) = %+v, Stat = %+v", key, list, info)
			}
		}
	})
}

func TestNotVisibleBeforeCommit(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		w, err := st.Create(ctx, "a/b.bin")
		if err != nil {
			t.Fatal(err)
		}
		defer w.Abort()
		if _, err := w.Write(randBytes(6<<20, 1)); err != nil { // > PartSize on S3
			t.Fatal(err)
		}
		if _, err := st.Stat(ctx, "a/b.bin"); !errors.Is(err, ErrNotExist) {
			t.Fatalf("Stat before Commit: %v, want ErrNotExist", err)
		}
		if _, err := st.Open(ctx, "a/b.bin"); !errors.Is(err, ErrNotExist) {
			t.Fatalf("Open before Commit: %v, want ErrNotExist", err)
		}
		if got := listKeys(t, st, ""); got != "" {
			t.Fatalf("List before Commit = %q, want nothing", got)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
		if got := listKeys(t, st, ""); got != "a/b.bin" {
			t.Fatalf("List after Commit = %q", got)
		}
		if err := w.Abort(); err != nil {
			t.Fatalf("Abort after Commit: %v, want nil", err)
		}
		if err := w.Commit(); err == nil {
			t.Fatal("second Commit succeeded")
		}
		if _, err := w.Write([]byte("x")); err == nil {
			t.Fatal("Write after Commit succeeded")
		}
	})
}

func TestAbortLeavesNothing(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		for _, size := range []int{10, 11 << 20} { // one part; several parts on S3
			w, err := st.Create(ctx, "ab/x.bin")
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(randBytes(size, 2)); err != nil {
				t.Fatal(err)
			}
			if err := w.Abort(); err != nil {
				t.Fatal(err)
			}
			if err := w.Abort(); err != nil {
				t.Fatalf("second Abort: %v", err)
			}
			if err := w.Commit(); err == nil {
				t.Fatal("Commit after Abort succeeded")
			}
			if _, err := st.Stat(ctx, "ab/x.bin"); !errors.Is(err, ErrNotExist) {
				t.Fatalf("Stat after Abort: %v", err)
			}
			if got := listKeys(t, st, ""); got != "" {
				t.Fatalf("List after Abort = %q", got)
			}
			assertNoLeftovers(t, st, "ab/x.bin")
		}
	})
}

func TestIfAbsent(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		for _, size := range []int{5, 6 << 20} { // PutObject; multipart on S3
			key := "claim-" + strconv.Itoa(size)
			first, second := randBytes(size, 3), randBytes(size, 4)
			put(t, st, key, first, IfAbsent())
			err := tryPut(st, key, second, IfAbsent())
			if !errors.Is(err, ErrPrecondition) {
				t.Fatalf("second IfAbsent commit: %v, want ErrPrecondition", err)
			}
			sameBytes(t, key, get(t, st, key), first)
			assertNoLeftovers(t, st, key)
		}
	})
}

func TestIfMatch(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		for _, size := range []int{5, 6 << 20} {
			key := "cas-" + strconv.Itoa(size)
			put(t, st, key, randBytes(size, 5))
			v1, err := st.Stat(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			put(t, st, key, randBytes(size, 6)) // same size: the ETag must still change
			v2, err := st.Stat(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if v1.ETag == v2.ETag {
				// S3 ETags of identical sizes differ because contents differ; the
				// directory store's because every commit is a new file.
				t.Fatalf("ETag unchanged after rewrite: %s", v1.ETag)
			}
			if err := tryPut(st, key, randBytes(size, 7), IfMatch(v1.ETag)); !errors.Is(err, ErrPrecondition) {
				t.Fatalf("IfMatch(stale): %v, want ErrPrecondition", err)
			}
			want := randBytes(size, 8)
			if err := tryPut(st, key, want, IfMatch(v2.ETag)); err != nil {
				t.Fatalf("IfMatch(fresh): %v", err)
			}
			sameBytes(t, key, get(t, st, key), want)
			assertNoLeftovers(t, st, key)
		}
		if err := tryPut(st, "missing", []byte("x"), IfMatch("abc")); !errors.Is(err, ErrPrecondition) {
			t.Fatalf("IfMatch on a missing key: %v, want ErrPrecondition", err)
		}
		if _, err := st.Create(ctx, "both", IfAbsent(), IfMatch("abc")); err == nil {
			t.Fatal("Create with IfAbsent and IfMatch succeeded")
		}
		assertNoLeftovers(t, st, "missing")
	})
}

// TestConcurrentIncrements has goroutines increment a counter object with IfMatch and
// IfAbsent retry loops: a lost update shows as a short count.
func TestConcurrentIncrements(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		const workers, each = 4, 5
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range each {
					if err := increment(ctx, st, "counter"); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if got := string(get(t, st, "counter")); got != strconv.Itoa(workers*each) {
			t.Fatalf("counter = %s, want %d", got, workers*each)
		}
	})
}

// increment adds one to the decimal counter at key, retrying on ErrPrecondition.
func increment(ctx context.Context, st Store, key string) error {
	for {
		n, opt := 0, IfAbsent()
		if info, err := st.Stat(ctx, key); err == nil {
			o, err := st.Open(ctx, key)
			if err != nil {
				continue // replaced between Stat and Open
			}
			b, err := io.ReadAll(o)
			o.Close()
			if err != nil {
				continue // replaced while reading (S3 If-Match on GET)
			}
			if n, err = strconv.Atoi(string(b)); err != nil {
				return fmt.Errorf("counter %q: %v", b, err)
			}
			opt = IfMatch(info.ETag)
			// Another writer may have committed between Stat and Open: then the value read
			// is newer than info.ETag, and the commit below fails and retries.
		} else if !errors.Is(err, ErrNotExist) {
			return err
		}
		err := tryPut(st, key, []byte(strconv.Itoa(n+1)), opt)
		if err == nil {
			return nil
		}
		if !errors.Is(err, ErrPrecondition) {
			return err
		}
	}
}

func TestList(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		for _, k := range []string{"b/x", "ab", "a/b/c", "a.txt", "c", "a/a", "a/bb/d/e", "a/x/b/c", "abc/d"} {
			put(t, st, k, []byte(k))
		}
		for _, c := range []struct{ prefix, want string }{
			{"", "a.txt a/a a/b/c a/bb/d/e a/x/b/c ab abc/d b/x c"},
			{"a", "a.txt a/a a/b/c a/bb/d/e a/x/b/c ab abc/d"},
			{"a/", "a/a a/b/c a/bb/d/e a/x/b/c"},
			{"a/b", "a/b/c a/bb/d/e"},
			{"a/b/", "a/b/c"},
			{"a/bb/d", "a/bb/d/e"},
			{"a/b/c", "a/b/c"},
			{"ab", "ab abc/d"}, {"abc/", "abc/d"},
			{"b/", "b/x"},
			{"zz", ""},
			{"zz/", ""},
			{"c/", ""},
		} {
			if got := listKeys(t, st, c.prefix); got != c.want {
				t.Errorf("List(%q) = %q, want %q", c.prefix, got, c.want)
			}
		}
		// A prefix that ends inside a character (the common beginning of é and è,
		// which shards.CheckPresent may list): S3 refuses such a request.
		put(t, st, "é_x", []byte("1"))
		put(t, st, "è_x", []byte("2"))
		if got := listKeys(t, st, "\xc3"); got != "è_x é_x" {
			t.Errorf("List(%q) = %q, want both keys", "\xc3", got)
		}
		if got := listKeys(t, st, "\xc3\xa9"); got != "é_x" {
			t.Errorf("List(%q) = %q, want é_x", "\xc3\xa9", got)
		}
		for _, bad := range []string{"/a", "a//", "../", "a/../b"} {
			if _, err := st.List(ctx, bad); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("List(%q): %v, want ErrInvalidKey", bad, err)
			}
		}
	})
}

func TestMissing(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		put(t, st, "dir/file", []byte("x"))
		for _, key := range []string{"nope", "dir/nope", "dir", "dir/file/under"} {
			_, err := st.Stat(ctx, key)
			if !errors.Is(err, ErrNotExist) || !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("Stat(%s): %v, want ErrNotExist and fs.ErrNotExist", key, err)
			}
			if _, err := st.Open(ctx, key); !errors.Is(err, ErrNotExist) {
				t.Errorf("Open(%s): %v, want ErrNotExist", key, err)
			}
		}
	})
}

func TestDelete(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		put(t, st, "d/x", []byte("x"))
		put(t, st, "d/y", []byte("y"))
		if err := st.Delete(ctx, "d/x"); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Stat(ctx, "d/x"); !errors.Is(err, ErrNotExist) {
			t.Fatalf("Stat after Delete: %v", err)
		}
		put(t, st, "d/sub/z", []byte("z"))
		for _, key := range []string{"d/x", "nope", "nodir/nope", "d/sub"} {
			if err := st.Delete(ctx, key); err != nil {
				t.Fatalf("Delete(%s) of a missing key: %v", key, err)
			}
		}
		if got := listKeys(t, st, ""); got != "d/sub/z d/y" {
			t.Fatalf("List after Delete = %q", got)
		}
	})
}

func TestLargeObject(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		data := randBytes(2*MinPartSize+MinPartSize/2+3, 9) // 3 parts on S3 (PartSize 5 MiB)
		put(t, st, "big/obj", data)
		sameBytes(t, "big/obj", get(t, st, "big/obj"), data)
		o, err := st.Open(ctx, "big/obj")
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		buf := make([]byte, 1<<20)
		off := int64(MinPartSize - len(buf)/2) // across the first part boundary
		if _, err := o.ReadAt(buf, off); err != nil {
			t.Fatal(err)
		}
		sameBytes(t, "ReadAt across parts", buf, data[off:off+int64(len(buf))])
	})
}

func TestKeyValidation(t *testing.T) {
	forEachStore(t, func(t *testing.T, st Store) {
		for _, key := range []string{"", "/abs", "a//b", "a/", "..", "a/../b", "./a", "a/.", "x\x00y", ".f.tmp-0123", "a/.gptkit.lock"} {
			if _, err := st.Create(ctx, key); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("Create(%q): %v, want ErrInvalidKey", key, err)
			}
			if _, err := st.Stat(ctx, key); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("Stat(%q): %v, want ErrInvalidKey", key, err)
			}
			if _, err := st.Open(ctx, key); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("Open(%q): %v, want ErrInvalidKey", key, err)
			}
			if err := st.Delete(ctx, key); !errors.Is(err, ErrInvalidKey) {
				t.Errorf("Delete(%q): %v, want ErrInvalidKey", key, err)
			}
		}
		// Allowed: dot files, dots inside names, spaces and unicode.
		for _, key := range []string{".hidden", "a/.b", "a..b", "x.tmp-12", "spaced name/ü.json"} {
			put(t, st, key, []byte(key))
			sameBytes(t, key, get(t, st, key), []byte(key))
		}
	})
}
