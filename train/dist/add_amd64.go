//go:build amd64 && !noasm && gc

package dist

import "golang.org/x/sys/cpu"

var hasAVX2 = cpu.X86.HasAVX2

//go:noescape
func addAVX2(dst, in *float32, n int)

//go:noescape
func addDivAVX2(dst, in *float32, n int, w float32)

// add sets dst[i] = in[i] + dst[i]: the partial sum that came along the ring plus
// this rank's own value, always in that order.
func add(dst, in []float32) {
	in = in[:len(dst)]
	v := len(dst) &^ 7
	if hasAVX2 && v > 0 {
		addAVX2(&dst[0], &in[0], v)
		dst, in = dst[v:], in[v:]
	}
	addGo(dst, in)
}

// addDiv sets dst[i] = (in[i] + dst[i]) / w.
func addDiv(dst, in []float32, w float32) {
	in = in[:len(dst)]
	v := len(dst) &^ 7
	if hasAVX2 && v > 0 {
		addDivAVX2(&dst[0], &in[0], v, w)
		dst, in = dst[v:], in[v:]
	}
	addDivGo(dst, in, w)
}
