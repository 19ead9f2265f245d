package checkpoint

import (
	"io"
	"testing"
)

// BenchmarkSaveOpen measures a local Save of one 64 MiB file (hashing, fsync, rename)
// and reading it back verified, in MB/s of checkpoint data. GPT-2 124M's weights and
// AdamW state are ~1.5 GB: divide by the figure for the seconds a checkpoint costs.
func BenchmarkSaveOpen(b *testing.B) {
	data := payload(1, 64<<20)
	files := []File{{Name: "model.bin", Write: func(w io.Writer) error { _, err := w.Write(data); return err }}}
	root := b.TempDir()
	b.Run("save", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		step := int64(0)
		for b.Loop() {
			step++
			if _, err := Save(ctx, root, step, files, 1); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("open", func(b *testing.B) {
		dir, _, err := Latest(ctx, root)
		if err != nil {
			b.Fatal(err)
		}
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			rc, err := Open(ctx, dir, "model.bin")
			if err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, rc); err != nil {
				b.Fatal(err)
			}
			rc.Close()
		}
	})
}
