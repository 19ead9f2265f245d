package cuda

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// The simulated machine's GPUs: SimOptions.GPUs of them (default 1), each with
// a UUID and a PCI bus id derived from the host name and its index, so that two
// processes on one host that open the same simulated GPU see the same UUID, as
// two processes on one real GPU do, and processes on different hosts never do.
// SimOptions.VisibleDevices plays CUDA_VISIBLE_DEVICES as the driver reads it:
// a comma-separated list of indices or UUIDs (a unique prefix is enough), which
// ends at the first entry that names no GPU, or names one already listed; the
// ordinals are the positions in the list. Only the GPU that is opened gets a
// memory and runs kernels: a process drives one.

// simGPU is one GPU of the simulated machine.
type simGPU struct {
	index int // its place in the machine (CUDA_VISIBLE_DEVICES's numbers)
	uuid  [16]byte
	bus   string
}

// simDevices returns the machine's GPUs that are visible, in ordinal order.
func simDevices(o SimOptions) []simGPU {
	n := max(o.GPUs, 1)
	host := o.Host
	if host == "" {
		host, _ = os.Hostname()
	}
	all := make([]simGPU, n)
	for i := range all {
		sum := sha256.Sum256([]byte(fmt.Sprintf("gptkit cuda-sim|%s|%d", host, i)))
		all[i] = simGPU{index: i, bus: fmt.Sprintf("0000:%02x:00.0", 0x18+i)}
		copy(all[i].uuid[:], sum[:16])
		all[i].uuid[6] = all[i].uuid[6]&0x0f | 0x40 // a version-4 UUID, as NVIDIA's look
		all[i].uuid[8] = all[i].uuid[8]&0x3f | 0x80
	}
	if o.VisibleDevices == nil {
		return all
	}
	var vis []simGPU
	seen := map[int]bool{}
	for _, item := range strings.Split(*o.VisibleDevices, ",") {
		item = strings.TrimSpace(item)
		g, ok := findSimGPU(all, item)
		if !ok || seen[g.index] {
			break // the driver stops at the first entry it cannot use
		}
		seen[g.index] = true
		vis = append(vis, g)
	}
	return vis
}

// findSimGPU finds the GPU an entry of CUDA_VISIBLE_DEVICES names: an index,
// or a UUID (with or without "GPU-", any unique prefix).
func findSimGPU(all []simGPU, item string) (simGPU, bool) {
	if i, err := strconv.Atoi(item); err == nil {
		if i >= 0 && i < len(all) {
			return all[i], true
		}
		return simGPU{}, false
	}
	want := strings.ToLower(strings.TrimPrefix(item, "GPU-"))
	if want == "" {
		return simGPU{}, false
	}
	var found []simGPU
	for _, g := range all {
		if strings.HasPrefix(strings.TrimPrefix(formatUUID(g.uuid), "GPU-"), want) {
			found = append(found, g)
		}
	}
	if len(found) != 1 {
		return simGPU{}, false
	}
	return found[0], true
}

func (d *simDriver) deviceUUID(dev int) ([16]byte, error) {
	if err := d.checkDev("cuDeviceGetUuid", dev); err != nil {
		return [16]byte{}, err
	}
	return d.gpus[dev].uuid, nil
}

func (d *simDriver) devicePCIBusID(dev int) (string, error) {
	if err := d.checkDev("cuDeviceGetPCIBusId", dev); err != nil {
		return "", err
	}
	return d.gpus[dev].bus, nil
}
