package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
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
