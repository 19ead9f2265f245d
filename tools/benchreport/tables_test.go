package main

import (
	"strings"
	"testing"
)

// TestAdvRatio: the worst-case ratio comes from MB per CPU-second when the runs report
// it (a loaded machine stretches wall-clock ns/byte), from ns/byte otherwise.
func TestAdvRatio(t *testing.T) {
	out := `BenchmarkEncodeAdversarial/gpt2/normal-1MB 	100	 1000 ns/op	 250.0 MB/cpu-s	 4.0 ns/byte
BenchmarkEncodeAdversarial/gpt2/no-whitespace-digits 	10	 9000 ns/op	 25.00 MB/cpu-s	 90.0 ns/byte
BenchmarkEncodeAdversarial/neox-20b/normal-1MB 	100	 1000 ns/op	 4.0 ns/byte
BenchmarkEncodeAdversarial/neox-20b/one-char-run 	100	 1000 ns/op	 8.0 ns/byte
`
	g, err := parseGoBench(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tok, in string
		want    float64
	}{{"gpt2", "no-whitespace-digits", 10}, {"neox-20b", "one-char-run", 2}} {
		got, ok := advRatio(g, "BenchmarkEncodeAdversarial/"+c.tok+"/normal-1MB", "BenchmarkEncodeAdversarial/"+c.tok+"/"+c.in)
		if !ok || got != c.want {
			t.Errorf("%s %s: %v %v, want %v", c.tok, c.in, got, ok, c.want)
		}
	}
}
