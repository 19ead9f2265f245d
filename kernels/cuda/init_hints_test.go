package cuda

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// initFailDriver is a driver whose cuInit fails with a given code.
type initFailDriver struct {
	driverAPI
	code int
}

func (d initFailDriver) name() string                { return "libcuda.so.1" }
func (d initFailDriver) driverVersion() (int, error) { return 13000, nil }
func (d initFailDriver) init() error                 { return cuCheck("cuInit", int32(d.code)) }

// TestInitDeviceHints: the cuInit failures seen on real machines name their cause and
// the next step (a driver upgraded without a reboot, a forward-compatibility driver the
// GPU does not take, a container without /dev/nvidia-uvm); all three asked whether the
// kernel module was loaded.
func TestInitDeviceHints(t *testing.T) {
	for code, want := range map[int]string{
		803: "reboot",
		804: "forward-compatibility",
		999: "/dev/nvidia-uvm",
		100: "sees no GPU",
	} {
		_, err := initDevice(initFailDriver{code: code}, 0)
		if err == nil || !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "--device cpu") {
			t.Errorf("cuInit %d: %v, want ErrNoDevice saying %q and --device cpu", code, err, want)
		}
	}
}

// TestNCCLInitHint: a CUDA error at ncclCommInitRank names the driver's CUDA and the
// NCCL wheel of that major; other errors are left as they are.
func TestNCCLInitHint(t *testing.T) {
	cudaErr := fmt.Errorf("%w (rank 0 of 2)", ncclCheck("ncclCommInitRank", 1))
	err := ncclInitHint(cudaErr, "libnccl.so.2 (NCCL 2.28.3)", 12040)
	if !errors.Is(err, cudaErr) || !strings.Contains(err.Error(), "driver's 12.4") || !strings.Contains(err.Error(), "nvidia-nccl-cu12") {
		t.Errorf("hint: %v", err)
	}
	sysErr := ncclCheck("ncclCommInitRank", 2)
	if got := ncclInitHint(sysErr, "libnccl.so.2", 12040); got != sysErr {
		t.Errorf("a system error got a hint: %v", got)
	}
}

// TestNoGPUNamesVisibleDevices: a driver that shows no GPU while CUDA_VISIBLE_DEVICES
// is set names its value and what to do (it said "sees no GPU", or "CUDA_VISIBLE_DEVICES?",
// without the value that hid them); unset, the message does not blame it.
func TestNoGPUNamesVisibleDevices(t *testing.T) {
	t.Setenv("CUDA_VISIBLE_DEVICES", "7")
	_, err := initDevice(initFailDriver{code: 100}, 0)
	if err == nil || !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), `CUDA_VISIBLE_DEVICES="7"`) || !strings.Contains(err.Error(), "nvidia-smi -L") {
		t.Errorf("cuInit 100 with CUDA_VISIBLE_DEVICES=7: %v", err)
	}
	for _, v := range []string{"", "9", "GPU-ffff"} {
		_, err := DeviceCount(Options{Sim: &SimOptions{GPUs: 4, VisibleDevices: &v}})
		if err == nil || !errors.Is(err, ErrNoDevice) || !strings.Contains(err.Error(), fmt.Sprintf("CUDA_VISIBLE_DEVICES=%q", v)) {
			t.Errorf("cuda-sim with CUDA_VISIBLE_DEVICES=%q: %v", v, err)
		}
	}
	os.Unsetenv("CUDA_VISIBLE_DEVICES")
	if _, err := initDevice(initFailDriver{code: 100}, 0); err == nil || strings.Contains(err.Error(), "CUDA_VISIBLE_DEVICES") {
		t.Errorf("cuInit 100, CUDA_VISIBLE_DEVICES unset: %v", err)
	}
}
