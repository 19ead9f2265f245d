//go:build !amd64 || noasm || !gc

package inflate

// fastAsm does nothing where there is no assembly loop: huffmanFast decodes in Go.
func (z *Reader) fastAsm() {}

// asmLoop reports whether huffmanFast runs an assembly loop first: never here.
func asmLoop() bool { return false }
