package storage

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"gptkit/internal/redact"
)

// Writer locks: one writer at a time per dataset directory. Two runs that write the same
// directory would otherwise rename (or upload) their shards over each other's, and the
// run whose manifest is committed last would list the other's data. LockDir gives a run
// the directory for its whole length; a second writer fails at once, naming the first.
//
//   - A directory store locks DIR/.gptkit-writer.lock with flock(2) (POSIX locks over
//     NFS): the kernel drops the lock when its process ends, however it ends, so a dead
//     writer never blocks the next. The file holds the owner's description, for the
//     message; it stays (empty) after Release, like the commit lock files, and goes with
//     ReleaseRemoving (a writer that opened it just then sees that its flock is on a
//     removed file, and locks the new one).
//   - An S3 store creates DIR/.gptkit-writer.lock with If-None-Match: * (a conditional
//     write, which MinIO and AWS both honour) holding the owner and a lease, renewed every
//     renewEvery() with If-Match. A holder killed without Release stops renewing: a next
//     writer that finds the lock not rewritten for two renewals (by the server's clock)
//     waits for its lease to end (an AWS Batch retry on another host resumes, rather
//     than failing while the lease runs), unless it is renewed meanwhile, and takes the
//     lock over with If-Match on the dead holder's version; one that finds it recently
//     renewed (a live holder) fails at once. The lease is told by the server's clock
//     too (a holder's clock may run behind the next writer's). A holder that cannot renew for
//     half a lease considers the lock lost (Lock.Lost closes, Lock.Check fails) and must
//     stop writing before anyone may take it over; a taken-over holder learns it at its
//     next renewal.

// ErrLocked is matched by LockDir's error when another writer holds the directory.
var ErrLocked = errors.New("storage: the directory is being written by another writer")

// writerLockName is a directory's writer lock (a reserved name: see CheckKey).
const writerLockName = ".gptkit-writer.lock"

// WriterLockName is the file LockDir locks in a local directory.
const WriterLockName = writerLockName

// lockLease is how long an S3 lock outlives its holder's last renewal, and lockRenew how
// often a holder renews it (at most every lockLease/4); variables for tests.
var (
	lockLease = 2 * time.Minute
	lockRenew = 10 * time.Second
)

// renewEvery is how often a holder renews its S3 lock.
func renewEvery() time.Duration { return min(lockRenew, lockLease/4) }

// Lock is a directory's writer lock, held until Release.
type Lock struct {
	where string // the lock's location, for messages
	owner string

	release func() error
	remove  func() error // the lock file, before release (nil: release removes it, or there is none)
	lost    chan struct{}
	lostErr error
	mu      sync.Mutex
	once    sync.Once
	valid   func() error // nil: valid until Release (flock)
}

// lockInfo is what a lock file or object holds.
type lockInfo struct {
	Owner   string    `json:"owner"`
	Since   time.Time `json:"since"`
	Expires time.Time `json:"expires,omitzero"` // S3: the lease's end (the holder's clock)
	// S3: when the holder wrote it (its clock) and how often it renews it: a lock not
	// rewritten for about two renewals has a holder that stopped (absent in the locks
	// of older versions, which renewed every lockLease/4).
	Renewed      time.Time `json:"renewed,omitzero"`
	RenewEveryMS int64     `json:"renew_every_ms,omitempty"`
	// age is how long ago the lock object was last written, by the S3 server's clock
	// (its Date and Last-Modified); -1 where unknown. Not stored.
	age time.Duration
	// The holder process, so that a writer on the same host can tell a dead holder
	// (killed -9, its lease not yet expired) and take over at once: the host name, the
	// PID namespace, the PID and the process's start time (a reused PID is another
	// process).
	Host      string `json:"host,omitempty"`
	PIDNS     string `json:"pid_ns,omitempty"`
	PID       int    `json:"pid,omitempty"`
	ProcStart string `json:"proc_start,omitempty"`
}

// thisProcess fills in info's holder fields with this process.
func thisProcess(info lockInfo) lockInfo {
	info.Host, _ = os.Hostname()
	info.PID = os.Getpid()
	info.PIDNS, info.ProcStart = processIdentity(info.PID)
	return info
}

// holderDead reports whether info's holder is a process of this host (and PID namespace)
// that no longer runs.
func holderDead(info lockInfo) bool {
	host, _ := os.Hostname()
	if info.PID <= 0 || info.Host == "" || info.Host != host || info.PIDNS == "" {
		return false
	}
	ns, start := processIdentity(info.PID)
	if ns == "" {
		ns, _ = processIdentity(os.Getpid()) // the holder is gone: compare with ours
		return ns == info.PIDNS
	}
	return ns == info.PIDNS && start != info.ProcStart
}

// locker is implemented by the stores that can lock a directory.
type locker interface {
	lockDir(ctx context.Context, dir, owner string) (*Lock, error)
}

// LockDir takes the writer lock of dir ("" for the store's root) in st for owner, a
// description of the writer that a second writer's error quotes (the command, its pid
// and host). With the lock held elsewhere it fails at once with an error matching
// ErrLocked that names the holder. A Store of another implementation (a test's) gets a
// Lock that excludes nothing.
func LockDir(ctx context.Context, st Store, dir, owner string) (*Lock, error) {
	dir = strings.Trim(dir, "/")
	if dir != "" {
		if err := CheckKey(dir); err != nil {
			return nil, fmt.Errorf("storage: lock %s: %w", st, err)
		}
	}
	l, ok := st.(locker)
	if !ok {
		return &Lock{where: st.String(), owner: owner, lost: make(chan struct{}), release: func() error { return nil }}, nil
	}
	return l.lockDir(ctx, dir, owner)
}

// LockOwner describes this process as a lock's owner: what it does (a command line,
// credentials redacted), its pid and its host.
func LockOwner(what string) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%q (pid %d on %s)", redact.String(what), os.Getpid(), host)
}

// Release gives the lock up; a Lock released twice is released once.
func (l *Lock) Release() error {
	var err error
	l.once.Do(func() { err = l.release() })
	return err
}

// ReleaseRemoving gives the lock up and leaves no lock file behind (a directory
// store's stays otherwise) where the filesystem is local (ext4, XFS, Btrfs, tmpfs,
// overlayfs, ZFS; elsewhere, NFS say, it is Release): for a writer that wrote
// nothing, so that the directory it was given can go too. A writer opening the
// file as it goes sees that its lock is on a removed file and takes the lock
// again (making the directory again if it went).
func (l *Lock) ReleaseRemoving() error {
	var err error
	l.once.Do(func() {
		if l.remove != nil {
			err = l.remove() // while still held
		}
		err = errors.Join(err, l.release())
	})
	return err
}

// Lost is closed when the lock is lost while held (S3: it could not be renewed, or
// another writer took it over).
func (l *Lock) Lost() <-chan struct{} { return l.lost }

// Check returns nil while the lock is held, else why it is not: call it before a write
// that only the holder may make (a manifest's commit).
func (l *Lock) Check() error {
	select {
	case <-l.lost:
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.lostErr
	default:
	}
	if l.valid != nil {
		return l.valid()
	}
	return nil
}

func (l *Lock) lose(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case <-l.lost:
	default:
		l.lostErr = err
		close(l.lost)
	}
}

// lockedError says who holds the lock at where.
func lockedError(where string, info lockInfo, raw []byte) error {
	who := lockOwnerText(info.Owner)
	if who == "" {
		who = lockOwnerText(string(raw))
	}
	if who == "" {
		who = "an unknown writer"
	}
	since := ""
	if !info.Since.IsZero() {
		since = ", since " + info.Since.UTC().Format(time.RFC3339)
	}
	lease := ""
	if !info.Expires.IsZero() {
		// As expired judges it: a lease from when the server says the object was
		// written, where the lock records its renewal (the holder's own Expires reads
		// past already when its clock runs behind this one).
		end := info.Expires
		if !info.Renewed.IsZero() && info.age >= 0 {
			end = time.Now().Add(info.remaining())
		}
		lease = fmt.Sprintf("; if it died on another host, a writer started once it has not renewed its lock for %s waits for its lease to end (at %s by this host's clock) and takes it over", info.staleAfter().Round(time.Second), end.UTC().Format(time.RFC3339))
	}
	return fmt.Errorf("%w: %s%s (lock %s)\n---> HINT: wait for it to finish or stop it; two runs must not write one output (choose another output directory)%s", ErrLocked, who, since, where, lease)
}

// lockOwnerText is a lock's owner as the one line of ErrLocked's message names it: a
// lock file that is not a lock's JSON (garbled, or a binary file in its place) was
// printed whole, line breaks, terminal escapes and all. Its first line, quoted if it
// holds anything but printable text, cut at 200 bytes.
func lockOwnerText(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	s = strings.TrimSpace(s)
	limit := 200
	quote := !utf8.ValidString(s) || strings.ContainsFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' })
	if quote {
		limit = 50 // up to 4 bytes each once quoted
	}
	more := ""
	if len(s) > limit {
		s, more = s[:limit], "..."
		if !quote {
			s = strings.ToValidUTF8(s, "")
		}
	}
	if quote {
		s = strconv.Quote(s)
	}
	return s + more
}

// lockDir locks root/dir with flock on its lock file.
func (s *dirStore) lockDir(_ context.Context, dir, owner string) (*Lock, error) {
	d := dirPath(s, dir)
	if err := os.MkdirAll(d, 0o777); err != nil {
		return nil, fmt.Errorf("storage: lock %s: %w", d, err)
	}
	p := d + string(os.PathSeparator) + writerLockName
	var f *os.File
	for try := 0; ; try++ {
		var err error
		f, err = os.OpenFile(p, os.O_RDWR|os.O_CREATE, 0o666)
		if errors.Is(err, fs.ErrNotExist) && try < 100 {
			// The holder that removed the lock file removed the directory it
			// had made too (a run that wrote nothing): make it again.
			if err := os.MkdirAll(d, 0o777); err != nil {
				return nil, fmt.Errorf("storage: lock %s: %w", d, err)
			}
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("storage: lock %s: %w", p, err)
		}
		if lockFileOpened != nil {
			lockFileOpened()
		}
		held, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("storage: lock %s: %w", p, err)
		}
		if !held {
			raw, _ := os.ReadFile(p)
			var info lockInfo
			json.Unmarshal(raw, &info)
			f.Close()
			return nil, lockedError(p, info, raw)
		}
		// The file locked must still be the one at p: a holder's
		// ReleaseRemoving may have unlinked it between the open and the flock.
		same, err := sameFile(f, p)
		switch {
		case err == nil && same:
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			f.Close()
			return nil, fmt.Errorf("storage: lock %s: %w", p, err)
		case try >= 100:
			f.Close()
			return nil, fmt.Errorf("storage: lock %s: the lock file is replaced at every try (a filesystem whose stat and fstat disagree?)", p)
		default:
			dropLock(f)
			f.Close()
			continue
		}
		break
	}
	data, _ := json.Marshal(lockInfo{Owner: owner, Since: time.Now()})
	f.Truncate(0)
	f.WriteAt(append(data, '\n'), 0)
	l := &Lock{where: p, owner: owner, lost: make(chan struct{})}
	l.release = func() error {
		f.Truncate(0)
		dropLock(f)
		return f.Close() // drops the flock
	}
	if localFS(d) {
		// Only where an unlinked file is gone for every process at once: an NFS
		// client may still find the removed file by its name, and lock that.
		l.remove = func() error {
			if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
			return nil
		}
	}
	return l, nil
}

// lockFileOpened, when set, runs between a lock file's open and its flock (a
// test makes the holder go there).
var lockFileOpened func()

// sameFile reports whether f is the file at p.
func sameFile(f *os.File, p string) (bool, error) {
	a, err := f.Stat()
	if err != nil {
		return false, err
	}
	b, err := os.Stat(p)
	if err != nil {
		return false, err
	}
	return os.SameFile(a, b), nil
}

// dirPath is the local directory of dir in s.
func dirPath(s *dirStore, dir string) string {
	if dir == "" {
		return s.root
	}
	return s.path(dir)
}

// lockKey is the S3 key of dir's lock object (a reserved name, written around Create).
func (s *s3Store) lockKey(dir string) string { return s.objectKey(path.Join(dir, writerLockName)) }

// procStartTime is the start time field (22) of a /proc/PID/stat line, or "". The
// command name (field 2) may hold spaces and parentheses: fields count from its last ')'.
func procStartTime(stat string) string {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return ""
	}
	f := strings.Fields(stat[i+1:])
	if len(f) <= 19 {
		return ""
	}
	return f[19]
}
