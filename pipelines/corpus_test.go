package pipelines

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"gptkit/internal/testfiles"
)

// splitCorpus writes a small three-split corpus of tinyshakespeare pieces (100 to 1,500
// bytes; every 17th document empty) to dir: train = a.jsonl + b.jsonl.gz, val = c.jsonl,
// test = d.txt (one document). With ShardBytes 8 KiB the train split makes about twenty
// shards.
func splitCorpus(t testing.TB, dir string) []SplitInputs {
	t.Helper()
	text := string(testfiles.Read(t, "corpora/tinyshakespeare.txt"))
	seed, pos := uint32(1), 0
	piece := func() string {
		seed = seed*1664525 + 1013904223
		n := 100 + int(seed>>8)%1400
		if pos+n > len(text) {
			pos = 0
		}
		s := text[pos : pos+n]
		pos += n
		return s
	}
	jsonl := func(docs int) []byte {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		for i := range docs {
			s := piece()
			switch {
			case i%17 == 5:
				s = ""
			case i%23 == 7:
				// Invalid UTF-8 (kept as U+FFFD, counted): a resumed run counts it also
				// in the documents it skips.
				q, _ := json.Marshal(s)
				fmt.Fprintf(&b, "{\"text\":%s\xff\",\"meta\":%d}\n", q[:len(q)-1], i)
				continue
			}
			enc.Encode(map[string]any{"text": s, "meta": i})
		}
		return b.Bytes()
	}
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(jsonl(150))
	zw.Close()
	return []SplitInputs{
		{Split: "train", Inputs: []string{write("a.jsonl", jsonl(250)), write("b.jsonl.gz", gz.Bytes())}},
		{Split: "val", Inputs: []string{write("c.jsonl", jsonl(60))}},
		{Split: "test", Inputs: []string{write("d.txt", []byte(piece()+piece()))}},
	}
}

// fixedClock is the clock of runs whose outputs are compared byte for byte (the
// manifest records when the job started).
func fixedClock() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }

// snapshot reads every file under dir (relative path → contents), without the directory
// store's lock files.
func snapshot(t testing.TB, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == ".gptkit.lock" || d.Name() == ".gptkit-writer.lock" {
			return err
		}
		data, err := os.ReadFile(p)
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// sameFiles fails unless the two snapshots hold the same files with the same bytes.
func sameFiles(t testing.TB, what string, got, want map[string]string) {
	t.Helper()
	var diffs []string
	for name, w := range want {
		g, ok := got[name]
		switch {
		case !ok:
			diffs = append(diffs, "missing "+name)
		case g != w:
			diffs = append(diffs, "differs "+name)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			diffs = append(diffs, "extra "+name)
		}
	}
	sort.Strings(diffs)
	if len(diffs) > 0 {
		t.Fatalf("%s: the directory is not byte-identical to an uninterrupted run's: %s", what, strings.Join(diffs, ", "))
	}
}
