package cuda

import (
	"fmt"
	"math"
	"sync"
	"unsafe"
)

// The driverAPI of libcuda: each method is one driver call, its CUresult
// turned into an error naming the call.

func (d *driver) name() string { return d.lib }

func (d *driver) driverVersion() (int, error) {
	var v int32
	err := cuCheck("cuDriverGetVersion", d.cuDriverGetVersion(&v))
	return int(v), err
}

func (d *driver) init() error { return cuCheck("cuInit", d.cuInit(0)) }

func (d *driver) deviceCount() (int, error) {
	var n int32
	err := cuCheck("cuDeviceGetCount", d.cuDeviceGetCount(&n))
	return int(n), err
}

func (d *driver) device(ordinal int) (int32, error) {
	var dev int32
	err := cuCheck("cuDeviceGet", d.cuDeviceGet(&dev, int32(ordinal)))
	return dev, err
}

func (d *driver) deviceName(ordinal int) (string, error) {
	dev, err := d.device(ordinal)
	if err != nil {
		return "", err
	}
	name := make([]byte, 256)
	if err := cuCheck("cuDeviceGetName", d.cuDeviceGetName(&name[0], int32(len(name)), dev)); err != nil {
		return "", err
	}
	return cString(name), nil
}

func (d *driver) deviceAttribute(attr int32, ordinal int) (int, error) {
	dev, err := d.device(ordinal)
	if err != nil {
		return 0, err
	}
	var v int32
	err = cuCheck("cuDeviceGetAttribute", d.cuDeviceGetAttribute(&v, attr, dev))
	return int(v), err
}

func (d *driver) deviceTotalMem(ordinal int) (uint64, error) {
	dev, err := d.device(ordinal)
	if err != nil {
		return 0, err
	}
	var n uint64
	err = cuCheck("cuDeviceTotalMem", d.cuDeviceTotalMem(&n, dev))
	return n, err
}

func (d *driver) primaryCtxRetain(ordinal int) (cuContext, error) {
	dev, err := d.device(ordinal)
	if err != nil {
		return 0, err
	}
	var c uintptr
	err = cuCheck("cuDevicePrimaryCtxRetain", d.cuDevicePrimaryCtxRetain(&c, dev))
	return cuContext(c), err
}

func (d *driver) primaryCtxRelease(ordinal int) error {
	dev, err := d.device(ordinal)
	if err != nil {
		return err
	}
	return cuCheck("cuDevicePrimaryCtxRelease", d.cuDevicePrimaryCtxRelease(dev))
}

func (d *driver) ctxSetCurrent(c cuContext) error {
	return cuCheck("cuCtxSetCurrent", d.cuCtxSetCurrent(uintptr(c)))
}

func (d *driver) streamCreate() (stream, error) {
	var s uintptr
	err := cuCheck("cuStreamCreate", d.cuStreamCreate(&s, 0))
	return stream(s), err
}

func (d *driver) streamDestroy(s stream) error {
	return cuCheck("cuStreamDestroy", d.cuStreamDestroy(uintptr(s)))
}

func (d *driver) streamSynchronize(s stream) error {
	return cuCheck("cuStreamSynchronize", d.cuStreamSynchronize(uintptr(s)))
}

func (d *driver) streamWaitEvent(s stream, e event) error {
	return cuCheck("cuStreamWaitEvent", d.cuStreamWaitEvent(uintptr(s), uintptr(e), 0))
}

func (d *driver) eventCreate() (event, error) {
	var e uintptr
	err := cuCheck("cuEventCreate", d.cuEventCreate(&e, 2 /* CU_EVENT_DISABLE_TIMING */))
	return event(e), err
}

func (d *driver) eventRecord(e event, s stream) error {
	return cuCheck("cuEventRecord", d.cuEventRecord(uintptr(e), uintptr(s)))
}

func (d *driver) eventSynchronize(e event) error {
	return cuCheck("cuEventSynchronize", d.cuEventSynchronize(uintptr(e)))
}

func (d *driver) eventQuery(e event) (bool, error) {
	switch r := d.cuEventQuery(uintptr(e)); r {
	case 0:
		return true, nil
	case errNotReady:
		return false, nil
	default:
		return false, cuCheck("cuEventQuery", r)
	}
}

func (d *driver) eventDestroy(e event) error {
	return cuCheck("cuEventDestroy", d.cuEventDestroy(uintptr(e)))
}

func (d *driver) timingEventCreate() (event, error) {
	var e uintptr
	err := cuCheck("cuEventCreate", d.cuEventCreate(&e, 0 /* CU_EVENT_DEFAULT */))
	return event(e), err
}

func (d *driver) eventElapsed(start, end event) (float32, error) {
	var ms float32
	err := cuCheck("cuEventElapsedTime", d.cuEventElapsedTime(&ms, uintptr(start), uintptr(end)))
	return ms, err
}

// JIT options (CUjit_option).
const (
	jitErrorLogBuffer     = 5
	jitErrorLogBufferSize = 6
)

func (d *driver) moduleLoad(name string, ptx []byte) (module, error) {
	img := append(append([]byte(nil), ptx...), 0) // cuModuleLoadDataEx reads a C string
	logBuf := make([]byte, 8192)
	opts := []int32{jitErrorLogBuffer, jitErrorLogBufferSize}
	vals := []uintptr{uintptr(unsafe.Pointer(&logBuf[0])), uintptr(len(logBuf))}
	var m uintptr
	r := d.cuModuleLoadDataEx(&m, &img[0], uint32(len(opts)), &opts[0], &vals[0])
	if r != 0 {
		if log := cString(logBuf); log != "" {
			return 0, fmt.Errorf("cuda: cuModuleLoadDataEx: %w: %s", Result(r), log)
		}
		return 0, fmt.Errorf("cuda: cuModuleLoadDataEx: %w", Result(r))
	}
	return module(m), nil
}

func (d *driver) moduleUnload(m module) error {
	return cuCheck("cuModuleUnload", d.cuModuleUnload(uintptr(m)))
}

func (d *driver) moduleGetFunction(m module, name string) (function, error) {
	cname := append([]byte(name), 0)
	var f uintptr
	err := cuCheck("cuModuleGetFunction "+name, d.cuModuleGetFunction(&f, uintptr(m), &cname[0]))
	return function(f), err
}

// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
const funcAttrMaxDynamicShared = 8

func (d *driver) funcSetMaxDynamicShared(f function, bytes int) error {
	return cuCheck("cuFuncSetAttribute", d.cuFuncSetAttribute(uintptr(f), funcAttrMaxDynamicShared, int32(bytes)))
}

// The kernel parameter block: cuLaunchKernel takes void** kernelParams, an array
// of pointers to each argument's value. Both arrays live in one page of pinned
// host memory (not Go memory, so no Go pointer is handed to C to keep): slot i of
// the first maxParams words points at word maxParams+i, which holds argument i.
// The driver copies the values at launch, so the block is reused (under paramsMu).
const maxParams = 32

// freeParams frees launchKernel's pinned parameter block (Backend.Close).
func (d *driver) freeParams() error {
	d.paramsMu.Lock()
	defer d.paramsMu.Unlock()
	if d.params == nil {
		return nil
	}
	err := d.memFreeHost(unsafe.Pointer(unsafe.SliceData(d.params)))
	d.params = nil
	return err
}

func (d *driver) launchKernel(f function, grid, block dim3, sharedBytes int, s stream, args []uint64) error {
	if len(args) > maxParams {
		return fmt.Errorf("cuda: cuLaunchKernel: %d arguments, at most %d", len(args), maxParams)
	}
	d.paramsMu.Lock()
	defer d.paramsMu.Unlock()
	if d.params == nil {
		p, err := d.memAllocHost(2 * maxParams * 8)
		if err != nil {
			return err
		}
		d.params = unsafe.Slice((*uint64)(p), 2*maxParams)
		base := uint64(uintptr(p))
		for i := 0; i < maxParams; i++ {
			d.params[i] = base + uint64(8*(maxParams+i))
		}
	}
	copy(d.params[maxParams:], args)
	return cuCheck("cuLaunchKernel", d.cuLaunchKernel(uintptr(f), grid.x, grid.y, grid.z, block.x, block.y, block.z,
		uint32(sharedBytes), uintptr(s), unsafe.Pointer(unsafe.SliceData(d.params)), 0))
}

func (d *driver) memAlloc(bytes int) (devicePtr, error) {
	var p uintptr
	err := cuCheck(fmt.Sprintf("cuMemAlloc(%d bytes)", bytes), d.cuMemAlloc(&p, uint64(bytes)))
	return p, err
}

func (d *driver) memAllocManaged(bytes int) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := cuCheck(fmt.Sprintf("cuMemAllocManaged(%d bytes)", bytes), d.cuMemAllocManaged(&p, uint64(bytes), 1 /* CU_MEM_ATTACH_GLOBAL */))
	return p, err
}

func (d *driver) memAllocHost(bytes int) (unsafe.Pointer, error) {
	var p unsafe.Pointer
	err := cuCheck(fmt.Sprintf("cuMemAllocHost(%d bytes)", bytes), d.cuMemAllocHost(&p, uint64(bytes)))
	return p, err
}

func (d *driver) memFree(p devicePtr) error { return cuCheck("cuMemFree", d.cuMemFree(p)) }

func (d *driver) memFreeHost(p unsafe.Pointer) error {
	return cuCheck("cuMemFreeHost", d.cuMemFreeHost(p))
}

func (d *driver) memcpyHtoD(dst devicePtr, src unsafe.Pointer, bytes int, s stream) error {
	return cuCheck("cuMemcpyHtoDAsync", d.cuMemcpyHtoDAsync(dst, src, uint64(bytes), uintptr(s)))
}

func (d *driver) memcpyDtoH(dst unsafe.Pointer, src devicePtr, bytes int, s stream) error {
	return cuCheck("cuMemcpyDtoHAsync", d.cuMemcpyDtoHAsync(dst, src, uint64(bytes), uintptr(s)))
}

func (d *driver) memcpyDtoD(dst, src devicePtr, bytes int, s stream) error {
	return cuCheck("cuMemcpyDtoDAsync", d.cuMemcpyDtoDAsync(dst, src, uint64(bytes), uintptr(s)))
}

func (d *driver) memsetD8(dst devicePtr, v uint8, n int, s stream) error {
	return cuCheck("cuMemsetD8Async", d.cuMemsetD8Async(dst, v, uint64(n), uintptr(s)))
}

func (d *driver) memsetD32(dst devicePtr, v uint32, n int, s stream) error {
	return cuCheck("cuMemsetD32Async", d.cuMemsetD32Async(dst, v, uint64(n), uintptr(s)))
}

func (d *driver) memGetInfo() (free, total uint64, err error) {
	err = cuCheck("cuMemGetInfo", d.cuMemGetInfo(&free, &total))
	return free, total, err
}

var (
	_ driverAPI = (*driver)(nil)
	_           = math.MaxInt32
	_           = sync.Mutex{}
)
