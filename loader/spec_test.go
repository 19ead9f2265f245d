package loader

import (
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseData(t *testing.T) {
	dir := t.TempDir()
	yamlPath := filepath.Join(dir, "b.yaml")
	os.WriteFile(yamlPath, []byte("datasets:\n  - {path: a, weight: 3}\n  - {path: /abs/b}\n  - {path: 's3://x/y', weight: 0.5}\ntest: [{path: t}]\n"), 0o666)
	for _, c := range []struct {
		in   string
		want DataSpec
	}{
		{"dir", DataSpec{Train: []WeightedPath{{"dir", 1}}}},
		{"s3://b/p", DataSpec{Train: []WeightedPath{{"s3://b/p", 1}}}},
		{"0.7:a,0.3:s3://b/p", DataSpec{Blended: true, Train: []WeightedPath{{"a", 0.7}, {"s3://b/p", 0.3}}}},
		{" 2 : a ", DataSpec{Blended: true, Train: []WeightedPath{{"a", 2}}}},
		{yamlPath, DataSpec{Blended: true, Train: []WeightedPath{{filepath.Join(dir, "a"), 3}, {"/abs/b", 1}, {"s3://x/y", 0.5}}, Test: []WeightedPath{{filepath.Join(dir, "t"), 1}}}},
	} {
		got, err := ParseData(c.in)
		if err != nil || !reflect.DeepEqual(*got, c.want) {
			t.Errorf("ParseData(%q) = %+v, %v; want %+v", c.in, got, err, c.want)
		}
	}
	bad := map[string]string{
		"unknown.yaml": "datasets: [{path: a}]\nweights: 1\n",
		"nodata.yaml":  "valid: [{path: a}]\n",
		"empty.yaml":   "",
		"zero.yaml":    "datasets: [{path: a, weight: 0}]\n",
		"nopath.yaml":  "datasets: [{weight: 1}]\n",
		"syntax.yaml":  "datasets: [\n",
		"field.yaml":   "datasets: [{path: a, wieght: 1}]\n",
	}
	for name, text := range bad {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(text), 0o666)
		if _, err := ParseData(p); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: %v", name, err)
		}
	}
	for _, in := range []string{"", "0.7:a,b", "-1:a", "0:a", "1:", "NaN:a", "inf:a", filepath.Join(dir, "missing.yaml")} {
		if _, err := ParseData(in); err == nil {
			t.Errorf("ParseData(%q): no error", in)
		}
	}
	// GPT-NeoX users switch a dataset off with weight 0: the error says how to here.
	if _, err := ParseData("0.7:a,0:b"); err == nil || !strings.Contains(err.Error(), "remove it from the blend") || !strings.Contains(err.Error(), "b") {
		t.Errorf("ParseData(0.7:a,0:b): %v; want the error to say to remove b from the blend", err)
	}
	// A blend file in a bucket is read from the local disk only: it said "open
	// s3://b/blend.yaml: no such file or directory".
	want := "loader: blend file s3://b/blend.yaml: a blend file is read from a local path, not a URL: copy it to this machine and pass its path (the datasets it lists may be s3:// locations)"
	if _, err := ParseData("s3://b/blend.yaml"); err == nil || err.Error() != want {
		t.Errorf("ParseData(s3://b/blend.yaml): %v, want %s", err, want)
	}
}

// FuzzParseData checks that any data string parses or fails without panicking,
// and that a parsed blend has positive finite weights and non-empty paths.
func FuzzParseData(f *testing.F) {
	for _, s := range []string{"dir", "0.7:a,0.3:b", "1e3:s3://b/p", "1:a,,2:b", ":", "0x1p-2:a", "1:a:b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if strings.HasSuffix(s, ".yaml") || strings.HasSuffix(s, ".yml") {
			return // those name files
		}
		spec, err := ParseData(s)
		if err != nil {
			return
		}
		checkSpec(t, spec)
	})
}

// FuzzParseBlendFile checks the YAML blend parser on arbitrary input.
func FuzzParseBlendFile(f *testing.F) {
	for _, s := range []string{
		"datasets: [{path: a, weight: 0.7}, {path: b, weight: 0.3}]\n",
		"datasets:\n  - path: a\nvalid:\n  - path: v\n    weight: 2\ntest: []\n",
		"datasets: [{path: a, weight: .inf}]",
		"datasets: &x [{path: a}]\nvalid: *x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		spec, err := ParseBlendFile("fuzz.yaml", b)
		if err != nil {
			return
		}
		if len(spec.Train) == 0 {
			t.Fatal("a blend without datasets parsed")
		}
		checkSpec(t, spec)
	})
}

func checkSpec(t *testing.T, spec *DataSpec) {
	t.Helper()
	for _, l := range [][]WeightedPath{spec.Train, spec.Valid, spec.Test} {
		for _, wp := range l {
			if wp.Path == "" || !(wp.Weight > 0) || math.IsInf(wp.Weight, 0) {
				t.Fatalf("parsed %+v", wp)
			}
		}
	}
}

// FuzzParseSplit checks that ParseSplit returns finite non-negative weights with a
// positive sum, and that SplitRanges then tiles [0, n).
func FuzzParseSplit(f *testing.F) {
	for _, s := range []string{"969,30,1", "98/2", "1", "0,0,1", "1e308,1e308", " 3 , 4 "} {
		f.Add(s, uint16(1000))
	}
	f.Fuzz(func(t *testing.T, s string, n uint16) {
		w, err := ParseSplit(s)
		if err != nil {
			return
		}
		sum := 0.0
		for _, v := range w {
			if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("weights %v", w)
			}
			sum += v
		}
		if !(sum > 0) {
			t.Fatalf("weights %v sum to %v", w, sum)
		}
		r := SplitRanges(int(n), w)
		if r[0][0] != 0 || r[2][1] != int(n) || r[0][1] != r[1][0] || r[1][1] != r[2][0] {
			t.Fatalf("SplitRanges(%d, %v) = %v", n, w, r)
		}
		for _, x := range r {
			if x[0] > x[1] {
				t.Fatalf("SplitRanges(%d, %v) = %v", n, w, r)
			}
		}
	})
}

// TestBlendFileRelativeFileURL: a relative file:// path in a blend file is relative to
// the file, as plain relative paths are (it was opened from the working directory).
func TestBlendFileRelativeFileURL(t *testing.T) {
	spec, err := ParseBlendFile("/data/blend.yaml", []byte("datasets: [{path: 'file://pile'}, {path: pile2}, {path: 'file:///abs/pile3'}]\n"))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"/data/pile", "/data/pile2", "/abs/pile3"} {
		if got := spec.Train[i].Path; got != want {
			t.Errorf("path %d: %q, want %q", i, got, want)
		}
	}
}
