package sim

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds the parser and the decoder arbitrary text (seeded with the
// committed PTX and the tests' kernels): they must return an error or a
// module, never panic or hang.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../ptx/*.ptx")
	for _, p := range files {
		if src, err := os.ReadFile(p); err == nil {
			f.Add(src)
		}
	}
	f.Add([]byte(ptxHeader + `.visible .entry k(.param .u64 p) { .reg .b32 %r<3>; { .reg .b32 c; mov.b32 c, 0x80008000U; } @!%r1 bra $L; $L: ret; }`))
	f.Add([]byte(ptxHeader + `.const .align 4 .b8 t[8] = {0, 0, 128, 63, 0, 0, 0, 64}; .extern .shared .align 16 .b8 dyn[];`))
	f.Add([]byte(".version 7.8 /* unterminated"))
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1<<16 {
			return
		}
		m, err := Parse("fuzz.ptx", src)
		if err != nil {
			return
		}
		d := NewDevice(Config{MemoryBytes: 1 << 20})
		if im, err := d.Load(m); err == nil {
			im.Unload()
		}
	})
}
