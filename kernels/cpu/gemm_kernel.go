package cpu

// goKernel is the portable micro-kernel: the loop every assembly kernel
// implements, on a 4×8 tile. It is what runs under the noasm tag, off amd64,
// and on amd64 machines without AVX2 and FMA.
var goKernel = microKernel{name: "go", mr: 4, nr: 8, fn: gemmKernelGo}

// gemmKernelGo: c[i*ldc+j] = alpha·Σ_p a[i*rs+p*ps]·b[p*bs+j] + c[i*ldc+j],
// with a zero-started accumulator per element summed over p in order. (The
// assembly kernels fuse the final multiply-add; Go does not.)
func gemmKernelGo(k int, a []float32, rs, ps int, b []float32, bs int, c []float32, ldc int, alpha float32) {
	const mr, nr = 4, 8
	var acc [mr][nr]float32
	for p := 0; p < k; p++ {
		bp := b[p*bs : p*bs+nr : p*bs+nr]
		for i := 0; i < mr; i++ {
			ai := a[i*rs+p*ps]
			acc[i][0] += ai * bp[0]
			acc[i][1] += ai * bp[1]
			acc[i][2] += ai * bp[2]
			acc[i][3] += ai * bp[3]
			acc[i][4] += ai * bp[4]
			acc[i][5] += ai * bp[5]
			acc[i][6] += ai * bp[6]
			acc[i][7] += ai * bp[7]
		}
	}
	for i := 0; i < mr; i++ {
		row := c[i*ldc : i*ldc+nr : i*ldc+nr]
		for j := range row {
			row[j] += alpha * acc[i][j]
		}
	}
}

// vecFmaAccGo: c += alpha·t.
func vecFmaAccGo(c, t []float32, alpha float32) {
	t = t[:len(c)]
	for i := range c {
		c[i] += alpha * t[i]
	}
}
