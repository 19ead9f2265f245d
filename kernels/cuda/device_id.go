package cuda

import (
	"fmt"
	"os"
	"strings"
)

// A device's identity, which every rank of a data-parallel job logs (so a
// wrong GPU assignment shows in the logs) and compares with the others' (two
// ranks on one GPU are refused): the UUID, unique across machines, and the PCI
// bus id, which says where in the machine the GPU sits.

// identify fills info's UUID and BusID.
func identify(d driverAPI, info *Info) error {
	u, err := d.deviceUUID(info.Ordinal)
	if err != nil {
		return err
	}
	info.UUID = formatUUID(u)
	info.BusID, err = d.devicePCIBusID(info.Ordinal)
	return err
}

// formatUUID writes a device UUID as nvidia-smi -L and CUDA_VISIBLE_DEVICES
// do: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx.
func formatUUID(u [16]byte) string {
	return fmt.Sprintf("GPU-%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

func (d *driver) deviceUUID(ordinal int) ([16]byte, error) {
	var u [16]byte
	dev, err := d.device(ordinal)
	if err != nil {
		return u, err
	}
	return u, cuCheck("cuDeviceGetUuid", d.cuDeviceGetUuid(&u, dev))
}

func (d *driver) devicePCIBusID(ordinal int) (string, error) {
	dev, err := d.device(ordinal)
	if err != nil {
		return "", err
	}
	b := make([]byte, 64)
	if err := cuCheck("cuDeviceGetPCIBusId", d.cuDeviceGetPCIBusId(&b[0], int32(len(b)), dev)); err != nil {
		return "", err
	}
	return strings.ToLower(cString(b)), nil
}

// Devices describes every GPU this process can use (after CUDA_VISIBLE_DEVICES),
// in ordinal order, without creating a context: what a rank needs to choose
// its GPU. With o.Sim, the simulated machine's GPUs.
func Devices(o Options) ([]Info, error) {
	drv, err := openDriver(o)
	if err != nil {
		return nil, err
	}
	first, err := initDevice(drv, 0)
	if err != nil {
		return nil, err
	}
	n, err := drv.deviceCount()
	if err != nil {
		return nil, err
	}
	out := []Info{first}
	for i := 1; i < n; i++ {
		info, err := initDevice(drv, i)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

// DeviceCount is the number of GPUs this process can use (after
// CUDA_VISIBLE_DEVICES), without looking at them further: what a rank needs to
// pick its GPU, which Open then checks. With o.Sim, the simulated machine's.
func DeviceCount(o Options) (int, error) {
	drv, err := openDriver(o)
	if err != nil {
		return 0, err
	}
	if err := drv.init(); err != nil {
		// initDevice words the reasons (no device, a stub library, ...)
		_, err := initDevice(drv, 0)
		return 0, err
	}
	n, err := drv.deviceCount()
	if err != nil {
		return 0, fmt.Errorf("cuda: %w: %v", ErrNoDevice, err)
	}
	if n == 0 {
		return 0, fmt.Errorf("cuda: %w: the driver (%s) shows no GPU to this process%s; use --device cpu", ErrNoDevice, drv.name(), visibleNote(drv))
	}
	return n, nil
}

// visibleNote is, when CUDA_VISIBLE_DEVICES is set (on the simulator,
// SimOptions.VisibleDevices), what to say of it where the driver shows no GPU:
// its value, which hides every GPU it does not name (an empty one, an index past
// the machine's, a UUID of another machine), and what to do. "" when unset.
func visibleNote(d driverAPI) string {
	v, set := os.LookupEnv("CUDA_VISIBLE_DEVICES")
	if sd, ok := d.(*simDriver); ok {
		set = sd.opts.VisibleDevices != nil
		if set {
			v = *sd.opts.VisibleDevices
		}
	}
	if !set {
		return ""
	}
	return fmt.Sprintf(" (CUDA_VISIBLE_DEVICES=%q hides every GPU it does not name: unset it, or name GPUs by index or UUID, as nvidia-smi -L lists them)", v)
}
