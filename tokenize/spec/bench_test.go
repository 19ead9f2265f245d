package spec

import (
	"context"
	"testing"
)

// BenchmarkLoadInProcess: loading each named tokenizer (its compiled form, embedded)
// in a process that has loaded it before (so package initialisation is not counted):
// ms/op is the figure of the < 30 ms goal; `make bench` also measures the whole fresh
// process (BenchmarkLoadProcess in cmd/tokenize).
//
//	go test ./tokenize/spec -run '^$' -bench LoadInProcess
func BenchmarkLoadInProcess(b *testing.B) {
	for _, name := range []string{"gpt2", "neox-20b", "cl100k_base", "o200k_base"} {
		b.Run(name, func(b *testing.B) {
			if _, err := Load(context.Background(), name, Options{}); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Load(context.Background(), name, Options{}); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/op")
		})
	}
}
