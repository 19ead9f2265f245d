package storage

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// etagMemStore is a remote-like store (no LocalPath) whose ETags are the MD5 of the content,
// as S3's are for single-part objects. afterStat, when set, runs once after Stat has
// computed its answer (an object replaced between Fetch's Stat and its Open).
type etagMemStore struct {
	name      string
	mu        sync.Mutex
	objs      map[string][]byte
	afterStat func()
	block     chan struct{} // when set, Open's reader blocks after the first MiB
}

func newETagMemStore(name string) *etagMemStore {
	return &etagMemStore{name: name, objs: map[string][]byte{}}
}

func (s *etagMemStore) set(key string, b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objs[key] = append([]byte(nil), b...)
}

func md5ETag(b []byte) string { h := md5.Sum(b); return hex.EncodeToString(h[:]) }

func (s *etagMemStore) Open(_ context.Context, key string) (Object, error) {
	s.mu.Lock()
	b, ok := s.objs[key]
	s.mu.Unlock()
	if !ok {
		return nil, notExist("open", key)
	}
	var r io.Reader = bytes.NewReader(b)
	if s.block != nil {
		r = &stallingReader{r: r, left: 1 << 20, block: s.block}
	}
	return &memObject{Reader: r, ReaderAt: bytes.NewReader(b), size: int64(len(b)), etag: md5ETag(b)}, nil
}

func (s *etagMemStore) Stat(_ context.Context, key string) (Info, error) {
	s.mu.Lock()
	b, ok := s.objs[key]
	f := s.afterStat
	s.afterStat = nil
	s.mu.Unlock()
	if !ok {
		return Info{}, notExist("stat", key)
	}
	info := Info{Key: key, Size: int64(len(b)), ETag: md5ETag(b)}
	if f != nil {
		f()
	}
	return info, nil
}

func (s *etagMemStore) Create(context.Context, string, ...WriteOption) (Writer, error) {
	return nil, fmt.Errorf("read-only")
}
func (s *etagMemStore) List(context.Context, string) ([]Info, error) { return nil, nil }
func (s *etagMemStore) Delete(context.Context, string) error         { return nil }
func (s *etagMemStore) LocalPath(string) (string, bool)              { return "", false }
func (s *etagMemStore) String() string                               { return s.name }

type memObject struct {
	io.Reader
	io.ReaderAt
	size int64
	etag string
}

// version is the ETag of the version opened (as s3Object's).
func (o *memObject) version() string { return o.etag }

func (o *memObject) Size() int64  { return o.size }
func (o *memObject) Close() error { return nil }

// stallingReader hands out left bytes, says "ready" once they are all out, then blocks.
type stallingReader struct {
	r     io.Reader
	left  int
	block chan struct{}
}

func (b *stallingReader) Read(p []byte) (int, error) {
	if b.left <= 0 {
		fmt.Println("ready")
		<-b.block
		return 0, io.ErrUnexpectedEOF
	}
	n, err := b.r.Read(p[:min(len(p), b.left)])
	b.left -= n
	return n, err
}

// TestFetchCachedCopyLabelledWithStatsETag: with no SHA-256 to check (shards verify's
// cachedReads), the copy is labelled with the ETag of the version Open read, not Stat's:
// an object replaced between the two left a copy of version B labelled as version A, and
// once the object was A again (same size, same ETag) the copy of B was served as A.
func TestFetchCachedCopyLabelledWithStatsETag(t *testing.T) {
	st := newETagMemStore("mem://etag-race")
	a := bytes.Repeat([]byte("A"), 4096)
	b := bytes.Repeat([]byte("B"), 4096)
	st.set("k.bin", a)
	st.afterStat = func() { st.set("k.bin", b) } // replaced after Stat, before Open
	cache := t.TempDir()
	if _, err := Fetch(ctx, st, "k.bin", cache, ""); err != nil {
		t.Fatal(err)
	}
	st.set("k.bin", a) // the object is version A again (ETag of A)
	p, err := Fetch(ctx, st, "k.bin", cache, "")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(p)
	if !bytes.Equal(got, a) {
		t.Fatalf("Fetch served a cached copy whose content is %q... while the store's object (ETag %s) is %q...: the sidecar recorded Stat's ETag, not the downloaded version's", got[:4], md5ETag(a), a[:4])
	}
}

const fetchKillHelperEnv = "GPTKIT_TEST_FETCH_KILL_CACHE"

// TestFetchKillHelper is the child of TestFetchKilledDownloadLeavesTemp: it fetches
// a 4 MiB object that stalls after 1 MiB and waits there to be killed.
func TestFetchKillHelper(t *testing.T) {
	cache := os.Getenv(fetchKillHelperEnv)
	if cache == "" {
		t.Skip("helper only")
	}
	st := newETagMemStore("mem://killed")
	st.set("d/shard.bin", bytes.Repeat([]byte("x"), 4<<20))
	st.block = make(chan struct{})
	Fetch(context.Background(), st, "d/shard.bin", cache, "")
	time.Sleep(time.Hour)
}

// TestFetchKilledDownloadLeavesTemp: a process killed while Fetch downloads (SIGKILL,
// OOM, preemption) leaves its partial ".NAME.tmp-*" file in the cache; the next Fetch of
// the same key removes it (it downloaded beside it, and every kill kept up to a whole
// shard of disk).
func TestFetchKilledDownloadLeavesTemp(t *testing.T) {
	cache := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestFetchKillHelper$", "-test.count=1")
	cmd.Env = append(os.Environ(), fetchKillHelperEnv+"="+cache)
	cmd.Stderr = os.Stderr
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
	time.Sleep(200 * time.Millisecond) // the first MiB is in the temp file
	cmd.Process.Kill()
	cmd.Wait()

	// The rerun fetches the same key successfully.
	st := newETagMemStore("mem://killed")
	data := bytes.Repeat([]byte("x"), 4<<20)
	st.set("d/shard.bin", data)
	p, err := Fetch(ctx, st, "d/shard.bin", cache, sha(data))
	if err != nil {
		t.Fatal(err)
	}
	var temps []string
	filepath.WalkDir(cache, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(d.Name(), tempMarker) {
			fi, _ := d.Info()
			temps = append(temps, fmt.Sprintf("%s (%d bytes)", path, fi.Size()))
		}
		return nil
	})
	if len(temps) > 0 {
		t.Fatalf("after the killed download and a successful rerun (%s), the cache still holds the dead download's temp files: %v", p, temps)
	}
}
