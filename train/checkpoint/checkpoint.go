package checkpoint

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gptkit/storage"
)

// ErrNone is matched (errors.Is) by Latest's and Resolve's error when a root holds no
// complete checkpoint.
var ErrNone = errors.New("no complete checkpoint")

// ErrCorrupt is matched by errors for a checkpoint whose files do not match its
// checkpoint.json (size or SHA-256), or whose checkpoint.json is invalid.
var ErrCorrupt = errors.New("checkpoint is corrupt")

// ErrPrune is matched by Save's error when the checkpoint was saved (Save returns its
// directory) but removing old ones failed: the caller may go on, and the next Save
// tries again.
var ErrPrune = errors.New("removing old checkpoints failed")

// File is one file of a checkpoint: Save calls Write once with a writer into the file.
type File struct {
	Name  string // letters, digits, '.', '_', '-'; not starting with '.'; not checkpoint.json
	Write func(io.Writer) error
}

// Manager saves and finds checkpoints with its settings; the package-level functions use
// the zero Manager (S3 settings from the environment, no logging).
type Manager struct {
	// Storage configures s3:// roots (endpoint, path style, region); the zero value takes
	// them from the environment ($AWS_ENDPOINT_URL_S3, ...).
	Storage storage.Options
	// Logger receives a line for each checkpoint Latest skips and each one Save removes;
	// nil discards them.
	Logger *slog.Logger
}

// Save writes files as the checkpoint of step under root (a directory, created if
// missing, or s3://bucket/prefix) and returns its directory, root/step_%08d. An existing
// checkpoint of the same step is replaced. Leftovers of interrupted local saves (.tmp-*)
// are removed first: root has one writer at a time. With keep > 0 it then removes
// complete checkpoints beyond the newest keep (never the one just written); a failure
// there returns the saved directory with an error matching ErrPrune.
func Save(ctx context.Context, root string, step int64, files []File, keep int) (string, error) {
	return Manager{}.Save(ctx, root, step, files, keep)
}

// Latest returns the newest complete checkpoint under root and its step. It skips
// incomplete or corrupt ones (Scan says why; the Manager's Logger gets a line each); with
// none, or no root at all, the error matches ErrNone.
func Latest(ctx context.Context, root string) (dir string, step int64, err error) {
	return Manager{}.Latest(ctx, root)
}

// Resolve turns what a user passes as --ckpt into a checkpoint directory: a checkpoint
// directory itself (holding checkpoint.json), a run's output directory (its newest
// complete checkpoint under path/checkpoints), or a checkpoint root.
func Resolve(ctx context.Context, path string) (string, error) {
	return Manager{}.Resolve(ctx, path)
}

// Open opens the file name of the checkpoint in dir. The reader checks the size and
// SHA-256 listed in checkpoint.json as it goes: a read that reaches the end of a file
// that does not match returns an error matching ErrCorrupt instead of io.EOF, so read
// to the end (io.ReadAll, or until io.EOF) before trusting the data.
func Open(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	return Manager{}.Open(ctx, dir, name)
}

// ReadFile returns the verified contents of the file name of the checkpoint in dir.
func ReadFile(ctx context.Context, dir, name string) ([]byte, error) {
	return Manager{}.ReadFile(ctx, dir, name)
}

// ReadManifest reads and validates the checkpoint.json of the checkpoint in dir.
func ReadManifest(ctx context.Context, dir string) (*Manifest, error) {
	return Manager{}.ReadManifest(ctx, dir)
}

// Verify reads every file of the checkpoint in dir and checks it against
// checkpoint.json; a mismatch matches ErrCorrupt.
func Verify(ctx context.Context, dir string) (*Manifest, error) {
	return Manager{}.Verify(ctx, dir)
}

// Scan lists every checkpoint under root, newest step first, with why each incomplete
// one is skipped. Leftovers of interrupted local saves (.tmp-*) are not listed.
func Scan(ctx context.Context, root string) ([]Entry, error) {
	return Manager{}.Scan(ctx, root)
}

// Entry is one checkpoint directory found by Scan.
type Entry struct {
	Dir     string
	Step    int64
	Problem string // "" when complete; else why Latest skips it
	// Unpublished marks an S3 checkpoint whose upload never wrote its checkpoint.json:
	// an interrupted save, where any other problem is damage (a local save that did
	// not finish leaves only a .tmp-* directory, never a step_NNNNNNNN one).
	Unpublished bool
}

// Complete reports whether the checkpoint has a valid checkpoint.json and all its files.
func (e Entry) Complete() bool { return e.Problem == "" }

func (m Manager) log() *slog.Logger {
	if m.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return m.Logger
}

// backend is where a root lives: a local directory or a storage.Store (S3).
type backend interface {
	save(ctx context.Context, step int64, files []File) (dir string, err error)
	// list lists the checkpoint directories (complete or not), newest step first,
	// without reading their checkpoint.json, and stale leftovers.
	list(ctx context.Context) (cands []candidate, stale []string, err error)
	readManifest(ctx context.Context, dirName string) (*Manifest, error)
	open(ctx context.Context, dirName, name string) (io.ReadCloser, int64, error)
	remove(ctx context.Context, dirName string) error
	removeStale(ctx context.Context, name string) error
	location(dirName string) string
}

// candidate is a listed checkpoint directory whose checkpoint.json is not read yet:
// Latest reads them newest first and stops at the first complete one (reading every
// one made each resume of a root that keeps all its checkpoints one read per
// checkpoint, hundreds of GETs on S3).
type candidate struct {
	Entry
	// check reads checkpoint.json and returns it, or why the checkpoint is not
	// complete; not called when Problem is set.
	check       func(context.Context) (*Manifest, error)
	unpublished bool // Entry.Unpublished when check fails
}

// entry reads the candidate's checkpoint.json and checks its files; the manifest is
// nil unless the checkpoint is complete.
func (c candidate) entry(ctx context.Context) (Entry, *Manifest) {
	e := c.Entry
	if e.Problem != "" || c.check == nil {
		return e, nil
	}
	man, err := c.check(ctx)
	if err != nil {
		e.Problem, e.Unpublished = err.Error(), c.unpublished
		return e, nil
	}
	return e, man
}

// scan lists the checkpoint directories (complete or not, newest step first),
// reading every checkpoint.json, and stale leftovers.
func scan(ctx context.Context, b backend) ([]Entry, []string, error) {
	cands, stale, err := b.list(ctx)
	if err != nil {
		return nil, nil, err
	}
	var entries []Entry
	for _, c := range cands {
		e, _ := c.entry(ctx)
		entries = append(entries, e)
	}
	return entries, stale, nil
}

func isS3(loc string) bool { return strings.HasPrefix(loc, "s3://") }

// backendFor opens root's backend; create says whether a missing local root is made.
func (m Manager) backendFor(ctx context.Context, root string, create bool) (backend, error) {
	if isS3(root) {
		st, err := storage.Open(ctx, root, m.Storage)
		if err != nil {
			return nil, err
		}
		return &s3Backend{st: st, root: strings.TrimRight(root, "/"), log: m.log()}, nil
	}
	return newLocal(strings.TrimPrefix(root, "file://"), create, m.log())
}

// splitDir splits a checkpoint directory into its root and directory name.
func splitDir(dir string) (root, name string, err error) {
	d := strings.TrimRight(dir, "/")
	if rest, ok := strings.CutPrefix(d, "s3://"); ok {
		i := strings.LastIndex(rest, "/")
		if i < 0 {
			return "", "", fmt.Errorf("%s is a bucket, not a checkpoint directory (want s3://bucket/.../step_NNNNNNNN)", dir)
		}
		root, name = "s3://"+rest[:i], rest[i+1:]
	} else {
		d = strings.TrimPrefix(d, "file://")
		root, name = filepath.Dir(d), filepath.Base(d)
	}
	if _, ok := parseDirName(name); !ok {
		return "", "", fmt.Errorf("%s is not a checkpoint directory (its name is not step_NNNNNNNN)", dir)
	}
	return root, name, nil
}

func (m Manager) Save(ctx context.Context, root string, step int64, files []File, keep int) (string, error) {
	if step < 0 {
		return "", fmt.Errorf("checkpoint: save step %d: negative step", step)
	}
	seen := map[string]bool{}
	for _, f := range files {
		if err := checkName(f.Name); err != nil {
			return "", fmt.Errorf("checkpoint: save step %d: %w", step, err)
		}
		if seen[f.Name] {
			return "", fmt.Errorf("checkpoint: save step %d: file %q given twice", step, f.Name)
		}
		seen[f.Name] = true
		if f.Write == nil {
			return "", fmt.Errorf("checkpoint: save step %d: file %q has no Write function", step, f.Name)
		}
	}
	b, err := m.backendFor(ctx, root, true)
	if err != nil {
		return "", fmt.Errorf("checkpoint: save step %d to %s: %w", step, root, err)
	}
	if lb, ok := b.(*localBackend); ok {
		// Leftovers of saves killed before they were renamed in place go
		// first: a few of them can fill the disk the next save needs (one
		// writer per root: the trainer holds its run directory).
		names, _ := lb.leftovers() // (a root that cannot be listed fails the save below)
		for _, name := range names {
			m.log().Info("checkpoint: removing the leftover of an interrupted save", "path", b.location(name))
			if err := b.removeStale(ctx, name); err != nil {
				m.log().Warn("checkpoint: could not remove the leftover of an interrupted save", "path", b.location(name), "err", err)
			}
		}
	}
	dir, err := b.save(ctx, step, files)
	if err != nil {
		return "", fmt.Errorf("checkpoint: save step %d to %s: %w", step, root, err)
	}
	if keep > 0 {
		if err := m.prune(ctx, b, step, keep); err != nil {
			return dir, fmt.Errorf("checkpoint: saved %s, but %w: %w", dir, ErrPrune, err)
		}
	}
	return dir, nil
}

// prune removes complete checkpoints beyond the newest keep (sparing step, just saved)
// and stale leftovers: .tmp-* directories, and on S3 incomplete checkpoints older than
// step. A removal that fails does not stop the others (one file that cannot be
// removed would otherwise keep every later save from pruning): their errors are
// returned together.
func (m Manager) prune(ctx context.Context, b backend, step int64, keep int) error {
	entries, stale, err := scan(ctx, b)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range stale {
		hook("prune-stale")
		m.log().Info("checkpoint: removing the leftover of an interrupted save", "path", b.location(s))
		if err := b.removeStale(ctx, s); err != nil {
			errs = append(errs, err)
		}
	}
	kept := 0
	for _, e := range entries { // newest first
		name := DirName(e.Step)
		switch {
		case e.Step == step:
			kept++
		case !e.Complete():
			if e.Unpublished && e.Step < step {
				m.log().Info("checkpoint: removing an interrupted upload", "dir", e.Dir)
				if err := b.remove(ctx, name); err != nil {
					errs = append(errs, err)
				}
			}
		case kept < keep:
			kept++
		default:
			hook("prune")
			m.log().Info("checkpoint: removing an old checkpoint", "dir", e.Dir, "keep", keep)
			if err := b.remove(ctx, name); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func (m Manager) Scan(ctx context.Context, root string) ([]Entry, error) {
	b, err := m.backendFor(ctx, root, false)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: scan %s: %w", root, err)
	}
	entries, _, err := scan(ctx, b)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: scan %s: %w", root, err)
	}
	return entries, nil
}

func (m Manager) Latest(ctx context.Context, root string) (string, int64, error) {
	d, _, err := m.latest(ctx, root)
	if err != nil {
		return "", 0, err
	}
	return d.dir, d.Manifest.Step, nil
}

// LatestDir is Latest, returning the checkpoint opened as OpenDir opens it, against
// the checkpoint.json Latest read to find it: a caller that goes on to read its files
// reads checkpoint.json once (one GET fewer on S3).
func (m Manager) LatestDir(ctx context.Context, root string) (*Dir, error) {
	d, _, err := m.latest(ctx, root)
	return d, err
}

// latest is LatestDir, also returning how many checkpoint directories root lists
// (complete or not; 0 when it cannot be listed). It reads their checkpoint.json
// newest first, up to the first complete one.
func (m Manager) latest(ctx context.Context, root string) (*Dir, int, error) {
	b, err := m.backendFor(ctx, root, false)
	if errors.Is(err, errNoRoot) {
		return nil, 0, fmt.Errorf("checkpoint: %s: %w (the directory does not exist)", root, ErrNone)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("checkpoint: latest in %s: %w", root, err)
	}
	cands, _, err := b.list(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("checkpoint: latest in %s: %w", root, err)
	}
	var skipped []string
	for _, c := range cands {
		e, man := c.entry(ctx)
		if e.Complete() {
			return &Dir{Manifest: man, b: b, dir: e.Dir, name: DirName(e.Step)}, len(cands), nil
		}
		m.log().Warn("checkpoint: skipping an incomplete checkpoint", "dir", e.Dir, "problem", e.Problem)
		skipped = append(skipped, fmt.Sprintf("%s: %s", DirName(e.Step), e.Problem))
	}
	if len(skipped) > 0 {
		return nil, len(cands), fmt.Errorf("checkpoint: %s: %w (skipped %s)", root, ErrNone, strings.Join(skipped, "; "))
	}
	return nil, 0, fmt.Errorf("checkpoint: %s: %w", root, ErrNone)
}

// LatestBefore is the newest complete checkpoint of root whose step is below step,
// opened as OpenDir opens it: what a run falls back to when the checkpoint of step
// is damaged. Like LatestDir it reads checkpoint.json newest first (below step) up
// to the first complete one, not every checkpoint's (one GET each on S3), but it
// warns about none it skips: the caller says why it looks. None: an error matching
// ErrNone.
func (m Manager) LatestBefore(ctx context.Context, root string, step int64) (*Dir, error) {
	b, err := m.backendFor(ctx, root, false)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: scan %s: %w", root, err)
	}
	cands, _, err := b.list(ctx)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: scan %s: %w", root, err)
	}
	for _, c := range cands { // newest first
		if c.Step >= step {
			continue
		}
		if e, man := c.entry(ctx); e.Complete() {
			return &Dir{Manifest: man, b: b, dir: e.Dir, name: DirName(e.Step)}, nil
		}
	}
	return nil, fmt.Errorf("checkpoint: %s: %w before step %d", root, ErrNone, step)
}

func (m Manager) Resolve(ctx context.Context, path string) (string, error) {
	d, err := m.ResolveDir(ctx, path)
	if err != nil {
		return "", err
	}
	return d.dir, nil
}

// ResolveDir is Resolve, returning the checkpoint opened as OpenDir opens it, against
// the checkpoint.json Resolve read: a caller that goes on to read its files reads
// checkpoint.json once (one GET fewer on S3).
func (m Manager) ResolveDir(ctx context.Context, path string) (*Dir, error) {
	path = strings.TrimRight(path, "/")
	if path == "" {
		return nil, errors.New("checkpoint: resolve: empty path (pass a checkpoint directory or a run's output directory)")
	}
	if !isS3(path) {
		local := strings.TrimPrefix(path, "file://")
		if fi, err := os.Stat(local); err == nil && !fi.IsDir() {
			return nil, fmt.Errorf("checkpoint: resolve %s: a file, not a directory: pass the checkpoint directory that holds it (%s) or a run's output directory", path, filepath.Dir(local))
		}
	}
	if _, _, err := splitDir(path); err == nil {
		return m.OpenDir(ctx, path)
	}
	d, _, err := m.latest(ctx, path+"/checkpoints")
	if err == nil || !errors.Is(err, ErrNone) {
		return d, err
	}
	// path itself a root (its checkpoint.json read up to the newest complete one:
	// it was read whole, every checkpoint's, before Latest read them again).
	if d, n, err := m.latest(ctx, path); n > 0 {
		return d, err
	}
	return nil, fmt.Errorf("checkpoint: resolve %s: %w: it is not a checkpoint directory (step_NNNNNNNN with %s), and neither %s/checkpoints nor %s holds a complete one", path, ErrNone, ManifestName, path, path)
}

// parseLoc splits a checkpoint directory and opens its root's backend.
func (m Manager) parseLoc(ctx context.Context, dir string) (backend, string, error) {
	root, name, err := splitDir(dir)
	if err != nil {
		return nil, "", err
	}
	b, err := m.backendFor(ctx, root, false)
	if errors.Is(err, errNoRoot) {
		return nil, "", fmt.Errorf("%s: no such checkpoint directory", dir)
	}
	return b, name, err
}

func (m Manager) ReadManifest(ctx context.Context, dir string) (*Manifest, error) {
	d, err := m.OpenDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	return d.Manifest, nil
}

// Dir is a checkpoint directory opened for reading: its checkpoint.json read once,
// and its files opened against that (Open and ReadFile read it for each file, a GET
// each on S3).
type Dir struct {
	// Manifest is the checkpoint's checkpoint.json, validated.
	Manifest *Manifest
	b        backend
	dir      string // as the caller named it
	name     string // step_NNNNNNNN
}

// OpenDir reads and validates the checkpoint.json of the checkpoint in dir, for its
// files to be opened with the Dir's Open and ReadFile.
func (m Manager) OpenDir(ctx context.Context, dir string) (*Dir, error) {
	b, name, err := m.parseLoc(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: read %s: %w", dir, err)
	}
	man, err := b.readManifest(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: read %s: %w", dir, err)
	}
	return &Dir{Manifest: man, b: b, dir: dir, name: name}, nil
}

// Path is the checkpoint directory, as OpenDir was given it.
func (d *Dir) Path() string { return d.dir }

func (m Manager) Open(ctx context.Context, dir, name string) (io.ReadCloser, error) {
	b, dname, err := m.parseLoc(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: open %s in %s: %w", name, dir, err)
	}
	man, err := b.readManifest(ctx, dname)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: open %s in %s: %w", name, dir, err)
	}
	return (&Dir{Manifest: man, b: b, dir: dir, name: dname}).Open(ctx, name)
}

// Open opens the file name of the checkpoint, as Manager.Open does, against the
// checkpoint.json OpenDir read: the reader checks the size and SHA-256 it lists.
func (d *Dir) Open(ctx context.Context, name string) (io.ReadCloser, error) {
	fi, ok := d.Manifest.File(name)
	if !ok {
		have := make([]string, len(d.Manifest.Files))
		for i, f := range d.Manifest.Files {
			have[i] = f.Name
		}
		return nil, fmt.Errorf("checkpoint: open %s in %s: no such file in the checkpoint (it has %s)", name, d.dir, strings.Join(have, ", "))
	}
	rc, size, err := d.b.open(ctx, d.name, name)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: open %s in %s: %w", name, d.dir, err)
	}
	if size != fi.Size {
		rc.Close()
		return nil, fmt.Errorf("checkpoint: open %s in %s: %w: the file has %d bytes, %s lists %d (truncated or overwritten; use an older checkpoint)", name, d.dir, ErrCorrupt, size, ManifestName, fi.Size)
	}
	return &verifier{rc: rc, h: sha256.New(), want: fi, where: d.b.location(d.name) + "/" + name}, nil
}

func (m Manager) ReadFile(ctx context.Context, dir, name string) ([]byte, error) {
	rc, err := m.Open(ctx, dir, name)
	if err != nil {
		return nil, err
	}
	return readAllOf(rc, dir, name)
}

// ReadFile returns the verified contents of the file name of the checkpoint, as
// Manager.ReadFile does, against the checkpoint.json OpenDir read.
func (d *Dir) ReadFile(ctx context.Context, name string) ([]byte, error) {
	rc, err := d.Open(ctx, name)
	if err != nil {
		return nil, err
	}
	return readAllOf(rc, d.dir, name)
}

// readAllOf reads rc, the file name of the checkpoint in dir, to its end and closes it.
func readAllOf(rc io.ReadCloser, dir, name string) ([]byte, error) {
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		return nil, fmt.Errorf("checkpoint: read %s in %s: %w", name, dir, err)
	}
	return data, nil
}

func (m Manager) Verify(ctx context.Context, dir string) (*Manifest, error) {
	d, err := m.OpenDir(ctx, dir)
	if err != nil {
		return nil, err
	}
	for _, f := range d.Manifest.Files {
		rc, err := d.Open(ctx, f.Name)
		if err != nil {
			return nil, err
		}
		_, err = io.Copy(io.Discard, rc)
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("checkpoint: verify %s: %w", dir, err)
		}
	}
	return d.Manifest, nil
}

// verifier passes a file through, checking its size and SHA-256 at the end.
type verifier struct {
	rc    io.ReadCloser
	h     hash.Hash
	n     int64
	want  FileInfo
	where string
	err   error
}

func (v *verifier) Read(p []byte) (int, error) {
	if v.err != nil {
		return 0, v.err
	}
	n, err := v.rc.Read(p)
	v.h.Write(p[:n])
	v.n += int64(n)
	if v.n > v.want.Size {
		v.err = fmt.Errorf("%s: %w: longer than the %d bytes %s lists", v.where, ErrCorrupt, v.want.Size, ManifestName)
		return 0, v.err
	}
	if err == io.EOF {
		if v.n != v.want.Size {
			v.err = fmt.Errorf("%s: %w: %d bytes, %s lists %d (truncated; use an older checkpoint)", v.where, ErrCorrupt, v.n, ManifestName, v.want.Size)
		} else if got := hex.EncodeToString(v.h.Sum(nil)); got != v.want.SHA256 {
			v.err = fmt.Errorf("%s: %w: sha256 %s, %s lists %s (the file changed after the save; use an older checkpoint)", v.where, ErrCorrupt, got, ManifestName, v.want.SHA256)
		} else {
			v.err = io.EOF
		}
		return n, v.err
	}
	if err != nil {
		v.err = err
	}
	return n, err
}

func (v *verifier) Close() error { return v.rc.Close() }

// sortCandidates orders candidates newest step first.
func sortCandidates(cands []candidate) {
	sort.Slice(cands, func(a, b int) bool { return cands[a].Step > cands[b].Step })
}

// hook is called at the named points of Save and prune, and as each checkpoint.json is
// read ("read-manifest"); the crash tests replace it to stop the process there, others
// to count.
var hook = func(point string) {}
