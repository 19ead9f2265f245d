package cuda

import (
	"errors"
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
