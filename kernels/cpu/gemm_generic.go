//go:build !amd64 || noasm || !gc

package cpu

// selectKernel: the portable micro-kernel (gemm_kernel.go).
func selectKernel() microKernel { return goKernel }

func kernelsAvailable() []microKernel { return []microKernel{goKernel} }

func vecFmaAcc(c, t []float32, alpha float32) { vecFmaAccGo(c, t, alpha) }

func packCopy(dst []float32, ldd int, src []float32, lds, k, w, width int) {
	packCopyGo(dst, ldd, src, lds, k, w, width)
}

func packTranspose(dst []float32, ldd int, src []float32, lds, rows, k int) {
	packTransposeGo(dst, ldd, src, lds, rows, k)
}
