package cuda

import (
	"slices"
	"testing"
)

// TestForDriver: the cuBLAS sonames tried are those of CUDA releases the driver runs
// (a cuBLAS 13 under a CUDA 12 driver loads, then fails at cublasCreate).
func TestForDriver(t *testing.T) {
	for _, c := range []struct {
		driver int
		want   []string
	}{
		{13000, []string{"libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}},
		{12080, []string{"libcublas.so.12", "libcublas.so.11"}},
		{11080, []string{"libcublas.so.11"}},
	} {
		if got := forDriver(cublasLibs, c.driver); !slices.Equal(got, c.want) {
			t.Errorf("driver %d: %v, want %v", c.driver, got, c.want)
		}
	}
	if got := forDriver([]string{"/opt/x/libcublas.so"}, 12000); len(got) != 1 {
		t.Errorf("a name without a major version is kept: %v", got)
	}
}
