//go:build !amd64 || noasm || !gc

package dist

// add sets dst[i] = in[i] + dst[i]: the partial sum that came along the ring plus
// this rank's own value, always in that order.
func add(dst, in []float32) { addGo(dst, in) }

// addDiv sets dst[i] = (in[i] + dst[i]) / w.
func addDiv(dst, in []float32, w float32) { addDivGo(dst, in, w) }
