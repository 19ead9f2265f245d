package prep

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestTextPool: with a pool, texts stay intact until their batch is released, whether
// the caller releases each batch at once (the arrays are reused) or holds them all.
func TestTextPool(t *testing.T) {
	dir := t.TempDir()
	var in strings.Builder
	var want []string
	for i := range 400 {
		// ~2 KB texts with escapes: several arena arrays per run.
		text := fmt.Sprintf("doc %d: %s", i, strings.Repeat("ab\\ncd\\u00e9", 150+i%50))
		in.WriteString(`{"text":"` + text + `"}` + "\n")
		want = append(want, strings.NewReplacer(`\n`, "\n", `\u00e9`, "é").Replace(text))
	}
	file := writeCorpusFile(t, dir, "a.jsonl", in.String())
	for _, hold := range []bool{false, true} {
		pool := new(TextPool)
		var got []string
		var held [][]Doc
		_, err := ReadBatches(context.Background(), []string{file}, ReadOptions{TextPool: pool}, 64<<10, func(b []Doc) error {
			for _, d := range b {
				got = append(got, strings.Clone(d.Text))
			}
			if hold {
				held = append(held, b)
			} else {
				pool.Release(b)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("hold %v: texts differ from those written", hold)
		}
		n := 0
		for _, b := range held {
			for _, d := range b {
				if d.Text != want[n] {
					t.Fatalf("held batch: text %d changed before its batch was released", n)
				}
				n++
			}
			pool.Release(b)
		}
		if hold && n != len(want) {
			t.Fatalf("held %d texts, want %d", n, len(want))
		}
		if len(pool.free) == 0 || len(pool.held) != 0 {
			t.Errorf("hold %v: %d arrays free, %d batches held after all were released", hold, len(pool.free), len(pool.held))
		}
	}
}
