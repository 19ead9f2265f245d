package cuda

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"gptkit/kernels"
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

	paramsMu sync.Mutex
	params   []uint64 // kernel parameter block in pinned host memory (see launchKernel)

	cuInit                    func(flags uint32) int32
	cuDriverGetVersion        func(v *int32) int32
	cuDeviceGetCount          func(n *int32) int32
	cuDeviceGet               func(dev *int32, ordinal int32) int32
	cuDeviceGetName           func(name *byte, n int32, dev int32) int32
	cuDeviceGetAttribute      func(v *int32, attr int32, dev int32) int32
	cuDeviceTotalMem          func(bytes *uint64, dev int32) int32
	cuDeviceGetUuid           func(uuid *[16]byte, dev int32) int32
	cuDeviceGetPCIBusId       func(id *byte, n int32, dev int32) int32
	cuDevicePrimaryCtxRetain  func(ctx *uintptr, dev int32) int32
	cuDevicePrimaryCtxRelease func(dev int32) int32
	cuCtxSetCurrent           func(ctx uintptr) int32
	cuStreamCreate            func(s *uintptr, flags uint32) int32
	cuStreamDestroy           func(s uintptr) int32
	cuStreamSynchronize       func(s uintptr) int32
	cuStreamWaitEvent         func(s, e uintptr, flags uint32) int32
	cuEventCreate             func(e *uintptr, flags uint32) int32
	cuEventRecord             func(e, s uintptr) int32
	cuEventSynchronize        func(e uintptr) int32
	cuEventQuery              func(e uintptr) int32
	cuEventDestroy            func(e uintptr) int32
	cuEventElapsedTime        func(ms *float32, start, end uintptr) int32
	cuModuleLoadDataEx        func(mod *uintptr, image *byte, n uint32, opts *int32, vals *uintptr) int32
	cuModuleUnload            func(mod uintptr) int32
	cuFuncSetAttribute        func(f uintptr, attr int32, v int32) int32
	cuModuleGetFunction       func(f *uintptr, mod uintptr, name *byte) int32
	cuLaunchKernel            func(f uintptr, gx, gy, gz, bx, by, bz, shmem uint32, s uintptr, params unsafe.Pointer, extra uintptr) int32
	cuMemAllocManaged         func(p *unsafe.Pointer, bytes uint64, flags uint32) int32
	cuMemAlloc                func(p *uintptr, bytes uint64) int32
	cuMemAllocHost            func(p *unsafe.Pointer, bytes uint64) int32
	cuMemFree                 func(p uintptr) int32
	cuMemFreeHost             func(p unsafe.Pointer) int32
	cuMemcpyDtoDAsync         func(dst, src uintptr, bytes uint64, s uintptr) int32
	cuMemcpyHtoDAsync         func(dst uintptr, src unsafe.Pointer, bytes uint64, s uintptr) int32
	cuMemcpyDtoHAsync         func(dst unsafe.Pointer, src uintptr, bytes uint64, s uintptr) int32
	cuMemsetD8Async           func(dst uintptr, v uint8, n uint64, s uintptr) int32
	cuMemsetD32Async          func(dst uintptr, v uint32, n uint64, s uintptr) int32
	cuMemGetInfo              func(free, total *uint64) int32
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
		{&d.cuDeviceGetUuid, "cuDeviceGetUuid_v2"},
		{&d.cuDeviceGetPCIBusId, "cuDeviceGetPCIBusId"},
		{&d.cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain"},
		{&d.cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2"},
		{&d.cuCtxSetCurrent, "cuCtxSetCurrent"},
		{&d.cuStreamCreate, "cuStreamCreate"},
		{&d.cuStreamDestroy, "cuStreamDestroy_v2"},
		{&d.cuStreamSynchronize, "cuStreamSynchronize"},
		{&d.cuStreamWaitEvent, "cuStreamWaitEvent"},
		{&d.cuEventCreate, "cuEventCreate"},
		{&d.cuEventRecord, "cuEventRecord"},
		{&d.cuEventSynchronize, "cuEventSynchronize"},
		{&d.cuEventQuery, "cuEventQuery"},
		{&d.cuEventDestroy, "cuEventDestroy_v2"},
		{&d.cuEventElapsedTime, "cuEventElapsedTime"},
		{&d.cuModuleLoadDataEx, "cuModuleLoadDataEx"},
		{&d.cuModuleUnload, "cuModuleUnload"},
		{&d.cuFuncSetAttribute, "cuFuncSetAttribute"},
		{&d.cuModuleGetFunction, "cuModuleGetFunction"},
		{&d.cuLaunchKernel, "cuLaunchKernel"},
		{&d.cuMemAllocManaged, "cuMemAllocManaged"},
		{&d.cuMemAlloc, "cuMemAlloc_v2"},
		{&d.cuMemAllocHost, "cuMemAllocHost_v2"},
		{&d.cuMemFree, "cuMemFree_v2"},
		{&d.cuMemFreeHost, "cuMemFreeHost"},
		{&d.cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2"},
		{&d.cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2"},
		{&d.cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2"},
		{&d.cuMemsetD8Async, "cuMemsetD8Async"},
		{&d.cuMemsetD32Async, "cuMemsetD32Async"},
		{&d.cuMemGetInfo, "cuMemGetInfo_v2"},
	})
	if err != nil {
		return nil, fmt.Errorf("%w (%w); update the NVIDIA driver", err, ErrDriverTooOld)
	}
	return d, nil
}

// Device attributes (CUdevice_attribute).
const (
	attrSMCount                 = 16
	attrComputeMajor            = 75
	attrComputeMinor            = 76
	attrManagedMemory           = 83
	attrConcurrentManagedAccess = 89
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
	UUID          string // "GPU-8-4-4-4-12 hex digits", as nvidia-smi -L prints it
	BusID         string // the PCI bus id, "0000:18:00.0"
}

func (i Info) String() string {
	return fmt.Sprintf("%s (sm_%d%d, %d SMs, %s, driver CUDA %d.%d)", i.Name, i.Major, i.Minor, i.SMs, kernels.GiB(int64(i.Memory)),
		i.DriverVersion/1000, i.DriverVersion%1000/10)
}

// initDevice initializes the driver and describes device ordinal, returning
// ErrNoDriver, ErrNoDevice or ErrDriverTooOld (wrapped) when it cannot be used.
func initDevice(d driverAPI, ordinal int) (Info, error) {
	info := Info{Ordinal: ordinal, Library: d.name()}
	ver, err := d.driverVersion()
	if err != nil {
		return info, fmt.Errorf("cuda: %w: %v", ErrNoDriver, err)
	}
	info.DriverVersion = ver
	if err := d.init(); err != nil {
		switch {
		case errors.Is(err, Result(errNoDevice)):
			return info, fmt.Errorf("cuda: %w: the driver (%s, CUDA %d.%d) sees no GPU%s; use --device cpu", ErrNoDevice, d.name(), ver/1000, ver%1000/10, visibleNote(d))
		case errors.Is(err, Result(errStubLibrary)):
			return info, fmt.Errorf("cuda: %w: %s is the toolkit's stub, not a driver; install the NVIDIA driver or use --device cpu", ErrNoDriver, d.name())
		case errors.Is(err, Result(803)): // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH
			return info, fmt.Errorf("cuda: %w: %v: the driver library (%s) is not the version of the loaded kernel module, as after a driver upgrade; reboot (or reload the nvidia module), or use --device cpu", ErrNoDevice, err, d.name())
		case errors.Is(err, Result(804)): // CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE
			return info, fmt.Errorf("cuda: %w: %v: a CUDA forward-compatibility driver (%s) that this GPU does not support; put the system driver's libcuda first on LD_LIBRARY_PATH, or use --device cpu", ErrNoDevice, err, d.name())
		case errors.Is(err, Result(999)): // CUDA_ERROR_UNKNOWN
			return info, fmt.Errorf("cuda: %w: %v: in a container this is often a missing /dev/nvidia-uvm (start it with the NVIDIA container runtime, --gpus); see nvidia-smi, or use --device cpu", ErrNoDevice, err)
		}
		return info, fmt.Errorf("cuda: %w: %v (is the NVIDIA kernel module loaded? see nvidia-smi); use --device cpu", ErrNoDevice, err)
	}
	if ver < minDriverVersion {
		return info, fmt.Errorf("cuda: %w: the driver supports CUDA %d.%d, the kernels' PTX needs 11.8 (driver R520 or newer); update the NVIDIA driver",
			ErrDriverTooOld, ver/1000, ver%1000/10)
	}
	n, err := d.deviceCount()
	if err != nil || n == 0 {
		return info, fmt.Errorf("cuda: %w: the driver reports %d GPUs; use --device cpu", ErrNoDevice, n)
	}
	if ordinal < 0 || ordinal >= n {
		return info, fmt.Errorf("cuda: %w: device %d asked for, %d present (check CUDA_VISIBLE_DEVICES and LOCAL_RANK)", ErrNoDevice, ordinal, n)
	}
	if info.Name, err = d.deviceName(ordinal); err != nil {
		return info, err
	}
	attr := func(a int32) int {
		v, _ := d.deviceAttribute(a, ordinal)
		return v
	}
	info.Major, info.Minor, info.SMs = attr(attrComputeMajor), attr(attrComputeMinor), attr(attrSMCount)
	info.Memory, _ = d.deviceTotalMem(ordinal)
	if info.Major < 8 {
		return info, fmt.Errorf("cuda: %w: %s has compute capability %d.%d; the kernels need 8.0 (A100, H100) or newer; use --device cpu",
			ErrNoDevice, info.Name, info.Major, info.Minor)
	}
	return info, identify(d, &info)
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
