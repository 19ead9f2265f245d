//go:build !amd64 || noasm || !gc

package cpu

// selectKernel: the portable micro-kernel (gemm_kernel.go).
func selectKernel() microKernel { return goKernel }

func kernelsAvailable() []microKernel { return []microKernel{goKernel} }

func vecFmaAcc(c, t []float32, alpha float32) { vecFmaAccGo(c, t, alpha) }
