//go:build !amd64 || noasm || !gc

package cpu

// selectKernel: the portable micro-kernel (gemm_kernel.go).
func selectKernel() microKernel { return goKernel }

func kernelsAvailable() []microKernel { return []microKernel{goKernel} }
