package checkpoint

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func saveSteps(t *testing.T, root string, keep int, steps ...int64) {
	t.Helper()
	for _, s := range steps {
		dir, err := Save(ctx, root, s, stepFiles(s, nil), keep)
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.TrimRight(root, "/") + "/" + DirName(s); dir != want && dir != filepath.Join(root, DirName(s)) {
			t.Fatalf("Save returned %s, want %s", dir, want)
		}
	}
}

func steps(t *testing.T, root string) (complete, incomplete []int64) {
	t.Helper()
	entries, err := Scan(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Complete() {
			complete = append(complete, e.Step)
		} else {
			incomplete = append(incomplete, e.Step)
		}
	}
	return complete, incomplete
}

func TestSaveLatestKeep(t *testing.T) {
	root := filepath.Join(t.TempDir(), "run", "checkpoints")
	saveSteps(t, root, 2, 10, 20, 30)
	dir, step, err := Latest(ctx, root)
	if err != nil || step != 30 || dir != filepath.Join(root, "step_00000030") {
		t.Fatalf("Latest = %s, %d, %v", dir, step, err)
	}
	checkStep(t, dir, 30)
	if c, _ := steps(t, root); len(c) != 2 || c[0] != 30 || c[1] != 20 {
		t.Fatalf("complete checkpoints %v after keep 2, want [30 20]", c)
	}
	// keep 0 keeps everything.
	saveSteps(t, root, 0, 40, 50)
	if c, _ := steps(t, root); len(c) != 4 {
		t.Fatalf("complete checkpoints %v after keep 0, want 4", c)
	}
	// Saving an older step than the newest (a run restarted from an older checkpoint)
	// never removes what was just written.
	saveSteps(t, root, 1, 35)
	if c, _ := steps(t, root); len(c) != 2 || c[0] != 50 || c[1] != 35 {
		t.Fatalf("complete checkpoints %v, want [50 35]", c)
	}
	des, _ := os.ReadDir(root)
	for _, de := range des {
		if strings.HasPrefix(de.Name(), ".") {
			t.Errorf("leftover %s", de.Name())
		}
	}
}

func TestSaveReplacesTheSameStep(t *testing.T) {
	root := t.TempDir()
	saveSteps(t, root, 0, 7)
	files := []File{{Name: "only.bin", Write: func(w io.Writer) error { _, err := w.Write([]byte("new")); return err }}}
	dir, err := Save(ctx, root, 7, files, 3)
	if err != nil {
		t.Fatal(err)
	}
	man, err := Verify(ctx, dir)
	if err != nil || len(man.Files) != 1 || man.Files[0].Name != "only.bin" {
		t.Fatalf("replaced checkpoint: %+v, %v", man, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "model.bin")); !os.IsNotExist(err) {
		t.Fatalf("model.bin of the replaced checkpoint is still there: %v", err)
	}
}

// TestReplaceHasNoGap: on Linux the replacement is one exchange of the two directories:
// the two-rename way, between whose renames a crash left the step only under .tmp-
// names (which prune then removed), is not taken, and nothing is left over.
func TestReplaceHasNoGap(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RENAME_EXCHANGE is Linux's")
	}
	root := t.TempDir()
	saveSteps(t, root, 0, 7)
	defer func(h func(string)) { hook = h }(hook)
	hook = func(point string) {
		if point == "replaced-aside" {
			t.Error("replaced in two renames")
		}
	}
	files := []File{{Name: "only.bin", Write: func(w io.Writer) error { _, err := w.Write([]byte("new")); return err }}}
	if _, err := Save(ctx, root, 7, files, 3); err != nil {
		t.Fatal(err)
	}
	des, _ := os.ReadDir(root)
	for _, de := range des {
		if strings.HasPrefix(de.Name(), ".") {
			t.Errorf("leftover %s", de.Name())
		}
	}
}

func TestLatestNone(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope")
	if _, _, err := Latest(ctx, missing); !errors.Is(err, ErrNone) {
		t.Fatalf("missing root: %v, want ErrNone", err)
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Fatal("Latest created the root")
	}
	root := t.TempDir()
	if _, _, err := Latest(ctx, root); !errors.Is(err, ErrNone) {
		t.Fatalf("empty root: %v, want ErrNone", err)
	}
	// Only an incomplete one: ErrNone, and the reason is in the message.
	os.MkdirAll(filepath.Join(root, "step_00000005"), 0o777)
	os.MkdirAll(filepath.Join(root, ".tmp-step_00000006-123"), 0o777)
	os.MkdirAll(filepath.Join(root, "step_5"), 0o777) // not canonical: ignored
	_, _, err := Latest(ctx, root)
	if !errors.Is(err, ErrNone) || !strings.Contains(err.Error(), "step_00000005: no checkpoint.json") {
		t.Fatalf("incomplete only: %v", err)
	}
}

func TestLatestSkipsIncompleteAndCorrupt(t *testing.T) {
	root := t.TempDir()
	saveSteps(t, root, 0, 1, 2, 3, 4)
	// 4: truncated file; 3: checkpoint.json missing; 2: bad checkpoint.json.
	os.Truncate(filepath.Join(root, "step_00000004", "model.bin"), 100)
	os.Remove(filepath.Join(root, "step_00000003", ManifestName))
	os.WriteFile(filepath.Join(root, "step_00000002", ManifestName), []byte(`{"format":"x"}`), 0o666)
	var logs bytes.Buffer
	m := Manager{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	dir, step, err := m.Latest(ctx, root)
	if err != nil || step != 1 {
		t.Fatalf("Latest = %s, %d, %v; want step 1", dir, step, err)
	}
	checkStep(t, dir, 1)
	for _, want := range []string{"model.bin has 100 bytes, checkpoint.json lists 1048579", "no checkpoint.json", `format \"x\"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	entries, _ := Scan(ctx, root)
	if len(entries) != 4 || entries[0].Complete() || !entries[3].Complete() {
		t.Fatalf("Scan = %+v", entries)
	}
	// Keep never removes incomplete local checkpoints (they may be evidence).
	saveSteps(t, root, 1, 5)
	if c, inc := steps(t, root); len(c) != 1 || len(inc) != 3 {
		t.Fatalf("after keep 1: complete %v, incomplete %v", c, inc)
	}
}

func TestOpenVerifies(t *testing.T) {
	root := t.TempDir()
	saveSteps(t, root, 0, 1)
	dir := filepath.Join(root, "step_00000001")
	path := filepath.Join(dir, "model.bin")
	b, _ := os.ReadFile(path)
	b[12345] ^= 1
	os.WriteFile(path, b, 0o666)
	_, err := ReadFile(ctx, dir, "model.bin")
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "sha256") || !strings.Contains(err.Error(), path) {
		t.Fatalf("flipped bit: %v, want ErrCorrupt naming the file", err)
	}
	if _, err := Verify(ctx, dir); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Verify: %v", err)
	}
	os.WriteFile(path, b[:10], 0o666)
	if _, err := Open(ctx, dir, "model.bin"); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "has 10 bytes") {
		t.Fatalf("truncated: %v", err)
	}
	if _, err := Open(ctx, dir, "nope.bin"); err == nil || !strings.Contains(err.Error(), "it has model.bin, state.json") {
		t.Fatalf("missing name: %v", err)
	}
	if _, err := Open(ctx, root, "model.bin"); err == nil || !strings.Contains(err.Error(), "not a checkpoint directory") {
		t.Fatalf("root as dir: %v", err)
	}
}

func TestResolve(t *testing.T) {
	run := t.TempDir()
	root := filepath.Join(run, "checkpoints")
	saveSteps(t, root, 0, 100, 200)
	for _, c := range []struct{ in, want string }{
		{run, filepath.Join(root, "step_00000200")},
		{run + "/", filepath.Join(root, "step_00000200")},
		{root, filepath.Join(root, "step_00000200")},
		{filepath.Join(root, "step_00000100"), filepath.Join(root, "step_00000100")},
	} {
		got, err := Resolve(ctx, c.in)
		if err != nil || got != c.want {
			t.Errorf("Resolve(%s) = %s, %v; want %s", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{t.TempDir(), filepath.Join(run, "nope"), filepath.Join(root, "step_00000300")} {
		if _, err := Resolve(ctx, in); err == nil {
			t.Errorf("Resolve(%s) succeeded", in)
		}
	}
	if _, err := Resolve(ctx, t.TempDir()); !errors.Is(err, ErrNone) {
		t.Errorf("Resolve(empty dir): %v, want ErrNone", err)
	}
	// A file of a checkpoint: the directory to pass instead is named (it said "stat
	// FILE/checkpoints: not a directory").
	dir := filepath.Join(root, "step_00000100")
	file := filepath.Join(dir, "model.bin")
	if _, err := Resolve(ctx, file); err == nil || !strings.Contains(err.Error(), "a file, not a directory: pass the checkpoint directory that holds it ("+dir+")") {
		t.Errorf("Resolve(%s): %v, want the directory to pass named", file, err)
	}
	if _, err := Resolve(ctx, "file://"+file); err == nil || !strings.Contains(err.Error(), "holds it ("+dir+")") {
		t.Errorf("Resolve(file://%s): %v, want the directory to pass named as a path", file, err)
	}
}

func TestSaveRejects(t *testing.T) {
	root := t.TempDir()
	w := func(io.Writer) error { return nil }
	for _, c := range []struct {
		step  int64
		files []File
		want  string
	}{
		{-1, nil, "negative step"},
		{1, []File{{Name: "", Write: w}}, "empty file name"},
		{1, []File{{Name: "checkpoint.json", Write: w}}, "reserved"},
		{1, []File{{Name: ".hidden", Write: w}}, "starts with '.'"},
		{1, []File{{Name: "a/b", Write: w}}, "only letters"},
		{1, []File{{Name: "a", Write: w}, {Name: "a", Write: w}}, "given twice"},
		{1, []File{{Name: "a"}}, "no Write function"},
	} {
		if _, err := Save(ctx, root, c.step, c.files, 0); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: err %v, want %q", c.files, err, c.want)
		}
	}
	// A failing Write leaves nothing behind.
	boom := errors.New("boom")
	_, err := Save(ctx, root, 1, []File{{Name: "a", Write: func(w io.Writer) error { w.Write([]byte("x")); return boom }}}, 0)
	if !errors.Is(err, boom) {
		t.Fatalf("failing Write: %v", err)
	}
	if des, _ := os.ReadDir(root); len(des) != 0 {
		t.Fatalf("a failed Save left %v", des)
	}
}

func TestDirNames(t *testing.T) {
	for _, c := range []struct {
		name string
		step int64
		ok   bool
	}{
		{"step_00000000", 0, true}, {"step_00000042", 42, true}, {"step_123456789", 123456789, true},
		{"step_42", 0, false}, {"step_-0000001", 0, false}, {"step_+0000001", 0, false}, {"step_", 0, false}, {"xstep_00000001", 0, false},
	} {
		step, ok := parseDirName(c.name)
		if ok != c.ok || ok && step != c.step {
			t.Errorf("parseDirName(%q) = %d, %v", c.name, step, ok)
		}
	}
}

// Leftovers of saves killed before their rename go before the next save, with
// a line on the log, whatever keep is: a few of them filled the disk the next
// save needed, and with keep 0 nothing removed them.
func TestSaveRemovesLeftoversFirst(t *testing.T) {
	root := t.TempDir()
	saveSteps(t, root, 0, 1)
	left := filepath.Join(root, ".tmp-step_00000002-123")
	if err := os.MkdirAll(left, 0o777); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(left, "model.bin"), make([]byte, 1000), 0o666)
	var logs bytes.Buffer
	m := Manager{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	if _, err := m.Save(ctx, root, 2, stepFiles(2, nil), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Errorf("the leftover is still there: %v", err)
	}
	if !strings.Contains(logs.String(), "removing the leftover of an interrupted save") {
		t.Errorf("no log line:\n%s", logs.String())
	}
}

// Two rollbacks to one step within a second set their checkpoints aside into two
// directories (the second failed: the name has the second's time only).
func TestSetAsideTwiceInASecond(t *testing.T) {
	root := t.TempDir()
	for range 2 {
		saveSteps(t, root, 0, 1, 2)
		aside, steps, err := Manager{}.SetAsideNewer(ctx, filepath.Join(root, DirName(1)))
		if err != nil || aside == "" || len(steps) != 1 {
			t.Fatalf("set aside: %q %v %v", aside, steps, err)
		}
	}
	if asides, _ := filepath.Glob(filepath.Join(root, AsidePrefix+"*")); len(asides) != 2 {
		t.Errorf("set-aside directories %v, want two", asides)
	}
}

// TestLinkedCheckpoint: a checkpoint directory moved to another disk and linked back is
// a checkpoint: Latest takes it (it was passed over without a word, and resume auto
// went back to an older one), a link whose target is gone is skipped saying so, and
// pruning a linked checkpoint removes the link, never the files it points to.
func TestLinkedCheckpoint(t *testing.T) {
	root := filepath.Join(t.TempDir(), "checkpoints")
	saveSteps(t, root, 0, 10, 20)
	elsewhere := filepath.Join(t.TempDir(), "step_00000020")
	if err := os.Rename(filepath.Join(root, "step_00000020"), elsewhere); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(elsewhere, filepath.Join(root, "step_00000020")); err != nil {
		t.Fatal(err)
	}
	if dir, step, err := Latest(ctx, root); err != nil || step != 20 {
		t.Fatalf("Latest = %s, %d, %v; want the linked step 20", dir, step, err)
	}
	if err := os.Symlink(filepath.Join(t.TempDir(), "gone"), filepath.Join(root, "step_00000030")); err != nil {
		t.Fatal(err)
	}
	entries, err := Scan(ctx, root)
	if err != nil || len(entries) != 3 || entries[0].Step != 30 || !strings.Contains(entries[0].Problem, "a link to") {
		t.Fatalf("Scan = %+v, %v; want the broken link listed first, as incomplete", entries, err)
	}
	if _, step, err := Latest(ctx, root); err != nil || step != 20 {
		t.Fatalf("Latest past a broken link: step %d, %v; want 20", step, err)
	}
	saveSteps(t, root, 1, 40)
	if c, _ := steps(t, root); len(c) != 1 || c[0] != 40 {
		t.Fatalf("complete checkpoints %v after keep 1, want [40]", c)
	}
	checkStep(t, elsewhere, 20) // the link went, not what it pointed to
}

// TestFirstSaveSyncsNewRoot: the first save into a root that does not exist yet
// (OUT/checkpoints, OUT too) fsyncs the parent of each directory it makes before it
// returns: the checkpoint's own fsyncs made its files and its entry in the root
// durable, not the root's entry in OUT, which a power loss could take with the
// checkpoint (the root was made by a plain os.MkdirAll).
func TestFirstSaveSyncsNewRoot(t *testing.T) {
	parent := t.TempDir()
	out := filepath.Join(parent, "out")
	root := filepath.Join(out, "checkpoints")
	var synced []string
	defer func(f func(string) error) { syncDir = f }(syncDir)
	syncDir = func(dir string) error {
		synced = append(synced, filepath.Clean(dir))
		return SyncDir(dir)
	}
	saveSteps(t, root, 0, 1)
	for _, want := range []string{parent, out, root} {
		if !slices.Contains(synced, want) {
			t.Errorf("%s was not fsynced (fsynced: %v)", want, synced)
		}
	}
	// A root that exists: its parent is left alone.
	synced = nil
	saveSteps(t, root, 0, 2)
	if slices.Contains(synced, out) {
		t.Errorf("%s fsynced again for a root that existed: %v", out, synced)
	}
}

// TestOpenDirReadsManifestOnce: a Dir's files open against the checkpoint.json
// OpenDir read (here removed after it, and still not needed), and are checked against
// it as Manager.Open checks them.
func TestOpenDirReadsManifestOnce(t *testing.T) {
	root := t.TempDir()
	saveSteps(t, root, 0, 3)
	dir := filepath.Join(root, DirName(3))
	d, err := Manager{}.OpenDir(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if d.Path() != dir || d.Manifest.Step != 3 {
		t.Fatalf("OpenDir(%s): path %s, step %d", dir, d.Path(), d.Manifest.Step)
	}
	if err := os.Remove(filepath.Join(dir, ManifestName)); err != nil {
		t.Fatal(err)
	}
	got, err := d.ReadFile(ctx, "state.json")
	if err != nil || string(got) != `{"step":3}`+"\n" {
		t.Fatalf("ReadFile state.json = %q, %v", got, err)
	}
	if _, err := d.Open(ctx, "nope.bin"); err == nil || !strings.Contains(err.Error(), "it has model.bin, state.json") {
		t.Errorf("Open of a file the checkpoint does not list: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state.json"), []byte(`{"step":4}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadFile(ctx, "state.json"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("ReadFile of a changed file: %v, want ErrCorrupt", err)
	}
}

// countManifestReads counts the checkpoint.json reads until the test ends.
func countManifestReads(t *testing.T) *int {
	t.Helper()
	n := new(int)
	h := hook
	t.Cleanup(func() { hook = h })
	hook = func(point string) {
		if point == "read-manifest" {
			*n++
		}
		h(point)
	}
	return n
}

// TestLatestReadsNewestFirst: Latest reads checkpoint.json newest first and stops at
// the first complete checkpoint: 1 read of 20 (it read all 20, one per checkpoint a
// root that keeps all holds), 3 when the newest two are incomplete, both still
// warned about and named when none is complete. Scan still reads all.
func TestLatestReadsNewestFirst(t *testing.T) {
	root := t.TempDir()
	var all []int64
	for s := int64(1); s <= 20; s++ {
		all = append(all, s)
	}
	saveSteps(t, root, 0, all...)
	reads := countManifestReads(t)
	if _, step, err := Latest(ctx, root); err != nil || step != 20 || *reads != 1 {
		t.Fatalf("Latest = %d, %v after %d checkpoint.json reads; want 20 after 1", step, err, *reads)
	}
	*reads = 0
	if entries, err := Scan(ctx, root); err != nil || len(entries) != 20 || *reads != 20 {
		t.Fatalf("Scan = %d entries, %v after %d checkpoint.json reads; want 20 after 20", len(entries), err, *reads)
	}

	os.Truncate(filepath.Join(root, "step_00000020", "model.bin"), 100)
	os.WriteFile(filepath.Join(root, "step_00000019", ManifestName), []byte(`{"format":"x"}`), 0o666)
	var logs bytes.Buffer
	m := Manager{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	*reads = 0
	if _, step, err := m.Latest(ctx, root); err != nil || step != 18 || *reads != 3 {
		t.Fatalf("Latest = %d, %v after %d checkpoint.json reads; want 18 after 3", step, err, *reads)
	}
	for _, want := range []string{"step_00000020 problem=\"model.bin has 100 bytes", "step_00000019 problem="} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
	if strings.Contains(logs.String(), "step_00000018") {
		t.Errorf("log warns about the complete step 18:\n%s", logs.String())
	}

	// None complete: every one is read, warned about and named.
	for s := int64(1); s <= 18; s++ {
		os.Remove(filepath.Join(root, DirName(s), ManifestName))
	}
	logs.Reset()
	*reads = 0
	_, _, err := m.Latest(ctx, root)
	if !errors.Is(err, ErrNone) || *reads != 20 || !strings.Contains(err.Error(), "step_00000020: model.bin has 100 bytes") ||
		!strings.Contains(err.Error(), "step_00000019: ") || !strings.Contains(err.Error(), "step_00000001: no checkpoint.json") {
		t.Fatalf("none complete: %v after %d reads", err, *reads)
	}
	if n := strings.Count(logs.String(), "skipping an incomplete checkpoint"); n != 20 {
		t.Errorf("%d warnings, want 20:\n%s", n, logs.String())
	}
}

// TestFallbackReadsNewestFirst: what a run does when its newest checkpoint is
// damaged reads checkpoint.json only as far as it must: LatestBefore the newest
// complete one below a step (1 read of 19; 3 when the two before it are
// incomplete, which it does not warn about, as Scan did not), and SetAsideNewer
// none (both read every checkpoint's, one GET each on S3).
func TestFallbackReadsNewestFirst(t *testing.T) {
	root := t.TempDir()
	var all []int64
	for s := int64(1); s <= 20; s++ {
		all = append(all, s)
	}
	saveSteps(t, root, 0, all...)
	var logs bytes.Buffer
	m := Manager{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	reads := countManifestReads(t)
	d, err := m.LatestBefore(ctx, root, 20)
	if err != nil || d.Path() != filepath.Join(root, DirName(19)) || d.Manifest.Step != 19 || *reads != 1 {
		t.Fatalf("LatestBefore(20) = %v, %v after %d checkpoint.json reads; want step 19 after 1", d, err, *reads)
	}
	if b, err := d.ReadFile(ctx, "state.json"); err != nil || string(b) != `{"step":19}`+"\n" || *reads != 1 {
		t.Fatalf("its state.json %q, %v after %d checkpoint.json reads in all; want step 19's after 1", b, err, *reads)
	}
	os.Truncate(filepath.Join(root, DirName(19), "model.bin"), 100)
	os.WriteFile(filepath.Join(root, DirName(18), ManifestName), []byte(`{"format":"x"}`), 0o666)
	*reads = 0
	if d, err := m.LatestBefore(ctx, root, 20); err != nil || d.Manifest.Step != 17 || *reads != 3 {
		t.Fatalf("LatestBefore(20) = %v, %v after %d checkpoint.json reads; want step 17 after 3", d, err, *reads)
	}
	if logs.Len() > 0 {
		t.Errorf("LatestBefore logged:\n%s", logs.String())
	}
	*reads = 0
	if _, err := m.LatestBefore(ctx, root, 1); !errors.Is(err, ErrNone) || *reads != 0 {
		t.Errorf("LatestBefore(1) = %v after %d reads; want ErrNone after 0", err, *reads)
	}
	*reads = 0
	aside, steps, err := m.SetAsideNewer(ctx, filepath.Join(root, DirName(17)))
	if err != nil || len(steps) != 3 || *reads != 0 {
		t.Fatalf("SetAsideNewer(17) = %s, %v, %v after %d checkpoint.json reads; want steps 20, 19, 18 after 0", aside, steps, err, *reads)
	}
	if _, step, err := Latest(ctx, root); err != nil || step != 17 {
		t.Errorf("after SetAsideNewer(17), Latest = %d, %v", step, err)
	}
}

// TestResolveReadsNewestFirst: Resolve of a root (a run directory's checkpoints given
// as the run directory's own) reads checkpoint.json up to the newest complete one
// (it read all of them for Scan, then again for Latest).
func TestResolveReadsNewestFirst(t *testing.T) {
	run := t.TempDir()
	root := filepath.Join(run, "checkpoints")
	saveSteps(t, root, 0, 1, 2, 3, 4, 5)
	reads := countManifestReads(t)
	for _, in := range []string{run, root} {
		*reads = 0
		if got, err := Resolve(ctx, in); err != nil || got != filepath.Join(root, "step_00000005") || *reads != 1 {
			t.Errorf("Resolve(%s) = %s, %v after %d checkpoint.json reads; want step 5 after 1", in, got, err, *reads)
		}
	}
}

// TestLatestDirReadsManifestOnce: the checkpoint LatestDir and ResolveDir find is
// opened against the checkpoint.json read to find it: its files read without reading
// that again (a resume read it once to find the checkpoint and once more to read its
// files: one GET more on S3), and checked against it as OpenDir's are.
func TestLatestDirReadsManifestOnce(t *testing.T) {
	run := t.TempDir()
	root := filepath.Join(run, "checkpoints")
	saveSteps(t, root, 0, 1, 2, 3)
	os.Truncate(filepath.Join(root, DirName(3), "model.bin"), 1) // skipped: 2 is the newest complete one
	var logs bytes.Buffer
	m := Manager{Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	reads := countManifestReads(t)
	want := filepath.Join(root, DirName(2))
	for _, open := range []struct {
		name string
		f    func() (*Dir, error)
	}{
		{"LatestDir(root)", func() (*Dir, error) { return m.LatestDir(ctx, root) }},
		{"ResolveDir(run)", func() (*Dir, error) { return m.ResolveDir(ctx, run) }},
		{"ResolveDir(root)", func() (*Dir, error) { return m.ResolveDir(ctx, root) }},
		{"ResolveDir(dir)", func() (*Dir, error) { return m.ResolveDir(ctx, want+"/") }},
	} {
		*reads = 0
		d, err := open.f()
		if err != nil {
			t.Fatalf("%s: %v", open.name, err)
		}
		if d.Path() != want || d.Manifest.Step != 2 {
			t.Errorf("%s: %s step %d, want %s step 2", open.name, d.Path(), d.Manifest.Step, want)
		}
		if got, err := d.ReadFile(ctx, "state.json"); err != nil || string(got) != `{"step":2}`+"\n" {
			t.Errorf("%s: ReadFile state.json = %q, %v", open.name, got, err)
		}
		n := 2 // 3's and 2's
		if open.name == "ResolveDir(dir)" {
			n = 1
		}
		if *reads != n {
			t.Errorf("%s then ReadFile: %d checkpoint.json reads, want %d", open.name, *reads, n)
		}
	}
	if !strings.Contains(logs.String(), "step_00000003 problem=\"model.bin has 1 bytes") {
		t.Errorf("log lacks the skipped step 3:\n%s", logs.String())
	}
	os.WriteFile(filepath.Join(want, "state.json"), []byte(`{"step":9}`+"\n"), 0o644)
	d, err := m.LatestDir(ctx, root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.ReadFile(ctx, "state.json"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("ReadFile of a changed file: %v, want ErrCorrupt", err)
	}
	if _, err := m.LatestDir(ctx, filepath.Join(run, "nope")); !errors.Is(err, ErrNone) {
		t.Errorf("LatestDir of no root: %v, want ErrNone", err)
	}
}
