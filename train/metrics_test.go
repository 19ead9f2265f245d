package train

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"gptkit/internal/durable"
)

// TestOpenMetricsKeepsStepsAfterLongLine: a resumed run keeps every step up to its
// checkpoint, however long a line before them is (a line over a scanner's limit used to
// end the reading there, and the file was rewritten without the steps after it).
func TestOpenMetricsKeepsStepsAfterLongLine(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, MetricsName)
	long := strings.Repeat("x", 3<<20) // no step: skipped, as a torn line is
	body := `{"step":1,"loss":3}` + "\n" + long + "\n" + `{"step":2,"loss":2}` + "\n" + `{"step":3,"loss":1}` + "\n" + `{"step":4,"lo`
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	mf, err := openMetrics(dir, 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := mf.close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"step":1,"loss":3}` + "\n" + `{"step":2,"loss":2}` + "\n"; string(got) != want {
		t.Errorf("kept %.200q, want %q", got, want)
	}
}

// recordSyncs makes syncDir, and durable.DirSync (writeFileAtomic's), record the
// directories they fsync (cleaned) for the rest of the test.
func recordSyncs(t *testing.T) *[]string {
	var synced []string
	old, oldDurable := syncDir, durable.DirSync
	t.Cleanup(func() { syncDir, durable.DirSync = old, oldDurable })
	syncDir = func(dir string) error {
		synced = append(synced, filepath.Clean(dir))
		return old(dir)
	}
	durable.DirSync = func(dir string) error {
		synced = append(synced, filepath.Clean(dir))
		return oldDurable(dir)
	}
	return &synced
}

// TestWriteFileAtomicSyncsDir: config.yaml, and metrics.jsonl cut back to a resumed
// step, are renamed into the run directory and the directory is fsynced after, so a
// crash right after cannot take the rename back (it was not: the new file's data was
// fsynced, its name in the directory was not).
func TestWriteFileAtomicSyncsDir(t *testing.T) {
	dir := t.TempDir()
	synced := recordSyncs(t)
	if err := writeFileAtomic(filepath.Join(dir, ConfigName), []byte("seed: 1\n")); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(*synced, dir) {
		t.Errorf("writing %s fsynced %v, not its directory %s", ConfigName, *synced, dir)
	}

	// A new metrics.jsonl: its name is synced into the directory.
	*synced = nil
	mf, err := openMetrics(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	mf.close()
	if !slices.Contains(*synced, dir) {
		t.Errorf("creating %s fsynced %v, not its directory %s", MetricsName, *synced, dir)
	}

	*synced = nil
	if err := os.WriteFile(filepath.Join(dir, MetricsName), []byte(`{"step":1}`+"\n"+`{"step":2}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	mf, err = openMetrics(dir, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := mf.close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(*synced, dir) {
		t.Errorf("cutting %s back fsynced %v, not its directory %s", MetricsName, *synced, dir)
	}
	got, _ := os.ReadFile(filepath.Join(dir, MetricsName))
	if string(got) != `{"step":1}`+"\n" {
		t.Errorf("%s holds %q after the cut to step 1", MetricsName, got)
	}
}
