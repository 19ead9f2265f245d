package prep

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	pqcompress "github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// BenchmarkReadParquet reads 8 MB of 4 KB English texts from a Parquet file of
// 512-row row groups, as HF datasets write them (snappy), and uncompressed (MB/s of
// text handed on):
//
//	go test ./prep -run '^$' -bench ReadParquet -cpu 1
func BenchmarkReadParquet(b *testing.B) {
	text := strings.Repeat(benchParagraph, 4096/len(benchParagraph)+1)[:4096]
	n := 8 << 20 / len(text)
	for _, codec := range []pqcompress.Compression{pqcompress.Codecs.Snappy, pqcompress.Codecs.Uncompressed} {
		b.Run(codec.String(), func(b *testing.B) {
			sc := arrow.NewSchema([]arrow.Field{{Name: "text", Type: arrow.BinaryTypes.String}}, nil)
			rb := array.NewRecordBuilder(memory.NewGoAllocator(), sc)
			defer rb.Release()
			for i := range n { // distinct texts: the dictionary overflows, as on real data
				rb.Field(0).(*array.StringBuilder).Append(fmt.Sprintf("%08d", i) + text[8:])
			}
			rec := rb.NewRecordBatch()
			defer rec.Release()
			var buf bytes.Buffer
			props := parquet.NewWriterProperties(parquet.WithMaxRowGroupLength(512), parquet.WithCompression(codec))
			w, err := pqarrow.NewFileWriter(sc, &buf, props, pqarrow.DefaultWriterProps())
			if err != nil {
				b.Fatal(err)
			}
			if err := w.Write(rec); err != nil {
				b.Fatal(err)
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			path := filepath.Join(b.TempDir(), "bench.parquet")
			if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(n * len(text)))
			b.ResetTimer()
			for range b.N {
				stats, err := ReadDocs(context.Background(), []string{path}, ReadOptions{}, func(Doc) error { return nil })
				if err != nil || stats.Docs != int64(n) {
					b.Fatal(stats, err)
				}
			}
		})
	}
}
