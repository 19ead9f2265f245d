package storage

import (
	"io"
	"testing"
)

// benchSize is the object size of the throughput benchmarks.
const benchSize = 256 << 20

// benchStores runs f against a fresh store of each kind (MinIO skipped unless installed,
// or failed when CI=true), with S3's default part size.
func benchStores(b *testing.B, f func(b *testing.B, st Store)) {
	for _, c := range storeCases {
		b.Run(c.name, func(b *testing.B) {
			st, _ := c.open(b, Options{PartSize: DefaultPartSize})
			f(b, st)
		})
	}
}

// BenchmarkWrite measures Create + Write (1 MiB calls) + Commit of a 256 MiB object.
func BenchmarkWrite(b *testing.B) {
	data := randBytes(benchSize, 1)
	benchStores(b, func(b *testing.B, st Store) {
		b.SetBytes(benchSize)
		for b.Loop() {
			w, err := st.Create(ctx, "bench/obj")
			if err != nil {
				b.Fatal(err)
			}
			for off := 0; off < len(data); off += 1 << 20 {
				if _, err := w.Write(data[off : off+1<<20]); err != nil {
					b.Fatal(err)
				}
			}
			if err := w.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkRead measures streaming a 256 MiB object through Read (io.Copy's 32 KiB
// buffer).
func BenchmarkRead(b *testing.B) {
	benchStores(b, func(b *testing.B, st Store) {
		put(b, st, "bench/obj", randBytes(benchSize, 2))
		b.SetBytes(benchSize)
		for b.Loop() {
			o, err := st.Open(ctx, "bench/obj")
			if err != nil {
				b.Fatal(err)
			}
			n, err := io.Copy(io.Discard, o)
			o.Close()
			if err != nil || n != benchSize {
				b.Fatalf("read %d bytes: %v", n, err)
			}
		}
	})
}

// BenchmarkReadAt measures reading a 256 MiB object in 4 MiB ReadAt calls (one ranged GET
// each on S3), as a loader reading shards piecewise would.
func BenchmarkReadAt(b *testing.B) {
	benchStores(b, func(b *testing.B, st Store) {
		put(b, st, "bench/obj", randBytes(benchSize, 3))
		buf := make([]byte, 4<<20)
		b.SetBytes(benchSize)
		for b.Loop() {
			o, err := st.Open(ctx, "bench/obj")
			if err != nil {
				b.Fatal(err)
			}
			for off := int64(0); off < benchSize; off += int64(len(buf)) {
				if _, err := o.ReadAt(buf, off); err != nil {
					b.Fatal(err)
				}
			}
			o.Close()
		}
	})
}
