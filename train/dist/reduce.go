package dist

// The reductions of the ring in plain Go: what runs off amd64 and under the
// noasm tag, and the tails of the AVX2 loops (add_amd64.s), which compute the
// same bits.

// addGo sets dst[i] = in[i] + dst[i].
func addGo(dst, in []float32) {
	in = in[:len(dst)]
	i := 0
	for ; i+4 <= len(dst); i += 4 {
		d := dst[i : i+4 : i+4]
		s := in[i : i+4 : i+4]
		d[0] = s[0] + d[0]
		d[1] = s[1] + d[1]
		d[2] = s[2] + d[2]
		d[3] = s[3] + d[3]
	}
	for ; i < len(dst); i++ {
		dst[i] = in[i] + dst[i]
	}
}

// addDivGo sets dst[i] = (in[i] + dst[i]) / w.
func addDivGo(dst, in []float32, w float32) {
	in = in[:len(dst)]
	for i := range dst {
		dst[i] = (in[i] + dst[i]) / w
	}
}
