package cuda

import (
	"fmt"
	"unsafe"
)

// driverLibs are the names libcuda is tried under.
var driverLibs = []string{"libcuda.so.1", "libcuda.so"}

// minDriverVersion is the CUDA version (cuDriverGetVersion's 1000·major+10·minor)
// whose driver JITs PTX ISA 7.8, what nvcc 11.8 emits: R520.
const minDriverVersion = 11080

// driver is the part of the CUDA driver API the backend uses. CUresult is int32;
// handles (contexts, streams, modules, functions) are uintptr; device addresses
// are uintptr too (CUdeviceptr is 64-bit). The _v2 symbols are the 64-bit ones
// cuda.h maps the plain names to.
type driver struct {
	lib string

	cuInit                    func(flags uint32) int32
	cuDriverGetVersion        func(v *int32) int32
	cuDeviceGetCount          func(n *int32) int32
	cuDeviceGet               func(dev *int32, ordinal int32) int32
	cuDeviceGetName           func(name *byte, n int32, dev int32) int32
	cuDeviceGetAttribute      func(v *int32, attr int32, dev int32) int32
	cuDeviceTotalMem          func(bytes *uint64, dev int32) int32
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) int32
	cuDevicePrimaryCtxRelease func(dev int32) int32
	cuCtxSetCurrent           func(ctx uintptr) int32
	cuStreamCreate            func(s *uintptr, flags uint32) int32
	cuStreamDestroy           func(s uintptr) int32
	cuStreamSynchronize       func(s uintptr) int32
	cuModuleLoadDataEx        func(mod *uintptr, image *byte, n uint32, opts *int32, vals *uintptr) int32
	cuModuleGetFunction       func(f *uintptr, mod uintptr, name *byte) int32
	cuLaunchKernel            func(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, s uintptr, params unsafe.Pointer, extra uintptr) int32
	cuMemAlloc                func(p *uintptr, bytes uint64) int32
	cuMemAllocHost            func(p *unsafe.Pointer, bytes uint64) int32
	cuMemFree                 func(p uintptr) int32
	cuMemcpyHtoDAsync         func(dst uintptr, src unsafe.Pointer, bytes uint64, s uintptr) int32
	cuMemcpyDtoHAsync         func(dst unsafe.Pointer, src uintptr, bytes uint64, s uintptr) int32
	cuMemsetD8Async           func(dst uintptr, v uint8, n uint64, s uintptr) int32
	cuMemsetD32Async          func(dst uintptr, v uint32, n uint64, s uintptr) int32
	cuMemGetInfo              func(free, total *uint64) int32
	cuEventCreate             func(ev *uintptr, flags uint32) int32
	cuEventRecord             func(ev, s uintptr) int32
	cuEventSynchronize        func(ev uintptr) int32
	cuEventDestroy            func(ev uintptr) int32
	cuMemFreeHost             func(p unsafe.Pointer) int32
}

// loadDriver opens libcuda (the first of names that loads) and binds the API.
func loadDriver(names []string) (*driver, error) {
	h, name, err := openLib(names...)
	if err != nil {
		return nil, fmt.Errorf("cuda: %w: cannot load the driver library: %v; install the NVIDIA driver or use --device cpu", ErrNoDriver, err)
	}
	d := &driver{lib: name}
	err = bindAll(h, name, []binding{
		{&d.cuInit, "cuInit"},
		{&d.cuDriverGetVersion, "cuDriverGetVersion"},
		{&d.cuDeviceGetCount, "cuDeviceGetCount"},
		{&d.cuDeviceGet, "cuDeviceGet"},
		{&d.cuDeviceGetName, "cuDeviceGetName"},
		{&d.cuDeviceGetAttribute, "cuDeviceGetAttribute"},
		{&d.cuDeviceTotalMem, "cuDeviceTotalMem_v2"},
		{&d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
		{&d.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"},
		{&d.cuCtxSetCurrent, "cuCtxSetCurrent"},
		{&d.cuStreamCreate, "cuStreamCreate"},
		{&d.cuStreamDestroy, "cuStreamDestroy_v2"},
		{&d.cuStreamSynchronize, "cuStreamSynchronize"},
		{&d.cuModuleLoadDataEx, "cuModuleLoadDataEx"},
		{&d.cuModuleGetFunction, "cuModuleGetFunction"},
		{&d.cuLaunchKernel, "cuLaunchKernel"},
		{&d.cuMemAlloc, "cuMemAlloc_v2"},
		{&d.cuMemAllocHost, "cuMemAllocHost_v2"},
		{&d.cuMemFree, "cuMemFree_v2"},
		{&d.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"},
		{&d.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"},
		{&d.cuMemsetD8Async, "cuMemsetD8Async"},
		{&d.cuMemsetD32Async, "cuMemsetD32Async"},
		{&d.cuMemGetInfo, "cuMemGetInfo_v2"},
		{&d.cuEventCreate, "cuEventCreate"},
		{&d.cuEventRecord, "cuEventRecord"},
		{&d.cuEventSynchronize, "cuEventSynchronize"},
		{&d.cuEventDestroy, "cuEventDestroy_v2"},
		{&d.cuMemFreeHost, "cuMemFreeHost"},
	})
	if err != nil {
		return nil, fmt.Errorf("%w (%w); update the NVIDIA driver", err, ErrDriverTooOld)
	}
	return d, nil
}

// Device attributes (CUdevice_attribute).
const (
	attrSMCount      = 16
	attrComputeMajor = 75
	attrComputeMinor = 76
)

// Info describes a device, as Probe reports it.
type Info struct {
	Ordinal       int
	Name          string
	Major, Minor  int    // compute capability
	SMs           int    // multiprocessors
	Memory        uint64 // bytes
	DriverVersion int    // 1000·major + 10·minor, e.g. 12040
	Library       string // the libcuda name that loaded
}

func (i Info) String() string {
	return fmt.Sprintf("%s (sm_%d%d, %d SMs, %s, driver CUDA %d.%d)", i.Name, i.Major, i.Minor, i.SMs, gib(i.Memory),
		i.DriverVersion/1000, i.DriverVersion%1000/10)
}

// initDevice loads and initializes the driver and describes device ordinal,
// returning ErrNoDriver, ErrNoDevice or ErrDriverTooOld (wrapped) when it cannot be
// used.
func initDevice(names []string, ordinal int) (*driver, Info, error) {
	d, err := loadDriver(names)
	if err != nil {
		return nil, Info{}, err
	}
	info := Info{Ordinal: ordinal, Library: d.lib}
	var ver int32
	if r := d.cuDriverGetVersion(&ver); r != 0 {
		return nil, info, fmt.Errorf("cuda: %w: cuDriverGetVersion: %v", ErrNoDriver, Result(r))
	}
	info.DriverVersion = int(ver)
	if r := d.cuInit(0); r != 0 {
		switch r {
		case errNoDevice:
			return nil, info, fmt.Errorf("cuda: %w: the driver (%s, CUDA %d.%d) sees no GPU; use --device cpu", ErrNoDevice, d.lib, ver/1000, ver%1000/10)
		case errStubLibrary:
			return nil, info, fmt.Errorf("cuda: %w: %s is the toolkit's stub, not a driver; install the NVIDIA driver or use --device cpu", ErrNoDriver, d.lib)
		}
		return nil, info, fmt.Errorf("cuda: %w: cuInit: %v (is the NVIDIA kernel module loaded? see nvidia-smi); use --device cpu", ErrNoDevice, Result(r))
	}
	if ver < minDriverVersion {
		return nil, info, fmt.Errorf("cuda: %w: the driver supports CUDA %d.%d, the kernels' PTX needs 11.8 (driver R520 or newer); update the NVIDIA driver",
			ErrDriverTooOld, ver/1000, ver%1000/10)
	}
	var n int32
	if r := d.cuDeviceGetCount(&n); r != 0 || n == 0 {
		return nil, info, fmt.Errorf("cuda: %w: the driver reports %d GPUs; use --device cpu", ErrNoDevice, n)
	}
	if ordinal < 0 || ordinal >= int(n) {
		return nil, info, fmt.Errorf("cuda: %w: device %d asked for, %d present (check CUDA_VISIBLE_DEVICES and LOCAL_RANK)", ErrNoDevice, ordinal, n)
	}
	var dev int32
	if err := cuCheck("cuDeviceGet", d.cuDeviceGet(&dev, int32(ordinal))); err != nil {
		return nil, info, err
	}
	name := make([]byte, 256)
	if err := cuCheck("cuDeviceGetName", d.cuDeviceGetName(&name[0], int32(len(name)), dev)); err != nil {
		return nil, info, err
	}
	info.Name = cString(name)
	attr := func(a int32) int {
		var v int32
		d.cuDeviceGetAttribute(&v, a, dev)
		return int(v)
	}
	info.Major, info.Minor, info.SMs = attr(attrComputeMajor), attr(attrComputeMinor), attr(attrSMCount)
	d.cuDeviceTotalMem(&info.Memory, dev)
	if info.Major < 8 {
		return nil, info, fmt.Errorf("cuda: %w: %s has compute capability %d.%d; the kernels need 8.0 (A100, H100) or newer; use --device cpu",
			ErrNoDevice, info.Name, info.Major, info.Minor)
	}
	return d, info, nil
}

// cString is the text of a NUL-terminated byte buffer.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}
