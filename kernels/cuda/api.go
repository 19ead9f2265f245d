package cuda

import (
	"unsafe"
)

// The backend reaches the GPU through three small interfaces, each with two
// implementations: the real library loaded at run time with purego (driver.go,
// cublas.go, nccl.go) and a simulated one (sim_driver.go, sim_blas.go,
// sim_nccl.go) that runs the same committed PTX on kernels/cuda/sim, keeps
// device memory in Go byte slices, executes streams in order and reduces
// between ranks in one process or through a Transport. The backend code above
// them (the ops, memory, launches) is the same for both: --device cuda-sim is
// the real backend on a simulated GPU.

// Handles of the driver API (CUcontext, CUstream, CUevent, CUmodule,
// CUfunction); 0 is the null stream.
type (
	cuContext uintptr
	stream    uintptr
	event     uintptr
	module    uintptr
	function  uintptr
)

// devicePtr is a device address (CUdeviceptr).
type devicePtr = uintptr

// dim3 is a grid or block shape.
type dim3 struct{ x, y, z uint32 }

// driverAPI is the part of the CUDA driver API the backend uses. Errors wrap a
// Result (so errors.Is(err, Result(errOutOfMemory)) works for both) and name
// the call.
type driverAPI interface {
	// name is the library ("libcuda.so.1") or "cuda-sim".
	name() string
	driverVersion() (int, error) // cuDriverGetVersion
	init() error                 // cuInit
	deviceCount() (int, error)
	deviceName(dev int) (string, error)
	deviceAttribute(attr int32, dev int) (int, error)
	deviceTotalMem(dev int) (uint64, error)
	deviceUUID(dev int) ([16]byte, error)   // cuDeviceGetUuid_v2
	devicePCIBusID(dev int) (string, error) // cuDeviceGetPCIBusId: "0000:18:00.0"
	primaryCtxRetain(dev int) (cuContext, error)
	primaryCtxRelease(dev int) error
	ctxSetCurrent(c cuContext) error

	streamCreate() (stream, error)
	streamDestroy(s stream) error
	streamSynchronize(s stream) error
	streamWaitEvent(s stream, e event) error
	eventCreate() (event, error)
	eventRecord(e event, s stream) error
	eventSynchronize(e event) error
	// eventQuery reports whether the work queued before the event's record
	// has finished (cuEventQuery; CUDA_ERROR_NOT_READY is false, no error).
	eventQuery(e event) (bool, error)
	eventDestroy(e event) error
	// timingEventCreate is an event that records when the GPU reached it
	// (cuEventCreate with CU_EVENT_DEFAULT), for eventElapsed.
	timingEventCreate() (event, error)
	// eventElapsed is the GPU time from start's record to end's, in
	// milliseconds (cuEventElapsedTime); both must have completed.
	eventElapsed(start, end event) (float32, error)

	// moduleLoad JIT-compiles PTX text (no NUL needed); an error carries the
	// JIT log.
	moduleLoad(name string, ptx []byte) (module, error)
	moduleUnload(m module) error
	moduleGetFunction(m module, name string) (function, error)
	// funcSetMaxDynamicShared raises a kernel's dynamic shared memory limit
	// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES).
	funcSetMaxDynamicShared(f function, bytes int) error
	// launchKernel launches f with one value per parameter (scalars and
	// pointers, at most 8 bytes each, as the kernel's signature has them).
	launchKernel(f function, grid, block dim3, sharedBytes int, s stream, args []uint64) error

	memAlloc(bytes int) (devicePtr, error)
	// memAllocManaged returns memory the host can address at the same address.
	memAllocManaged(bytes int) (unsafe.Pointer, error)
	memAllocHost(bytes int) (unsafe.Pointer, error) // pinned host memory
	memFree(p devicePtr) error
	memFreeHost(p unsafe.Pointer) error
	memcpyHtoD(dst devicePtr, src unsafe.Pointer, bytes int, s stream) error
	memcpyDtoH(dst unsafe.Pointer, src devicePtr, bytes int, s stream) error
	memcpyDtoD(dst, src devicePtr, bytes int, s stream) error
	memsetD8(dst devicePtr, v uint8, n int, s stream) error
	memsetD32(dst devicePtr, v uint32, n int, s stream) error
	memGetInfo() (free, total uint64, err error)
}

// blasAPI is the part of cuBLAS and cuBLASLt the backend uses: one GEMM
// description covering cublasGemmEx, cublasGemmStridedBatchedEx and
// cublasLtMatmul with an epilogue.
type blasAPI interface {
	name() string
	gemm(s stream, g gemm) error
	close() error
}

// ncclAPI is the part of NCCL the collectives use.
type ncclAPI interface {
	name() string
	getUniqueID() (UniqueID, error)
	commInitRank(nranks int, id UniqueID, rank int) (uintptr, error)
	commDestroy(comm uintptr) error
	allReduce(send, recv devicePtr, count int, dt ncclDataType, op ncclRedOp, comm uintptr, s stream) error
	broadcast(send, recv devicePtr, count int, dt ncclDataType, root int, comm uintptr, s stream) error
	reduce(send, recv devicePtr, count int, dt ncclDataType, op ncclRedOp, root int, comm uintptr, s stream) error
	reduceScatter(send, recv devicePtr, recvCount int, dt ncclDataType, op ncclRedOp, comm uintptr, s stream) error
	allGather(send, recv devicePtr, sendCount int, dt ncclDataType, comm uintptr, s stream) error
	// commGetAsyncError is ncclCommGetAsyncError: nil while the communicator
	// is healthy (ncclSuccess, ncclInProgress), else the error NCCL met in the
	// background (a peer gone, a network failure).
	commGetAsyncError(comm uintptr) error
	// commAbort is ncclCommAbort: it stops the communicator's operations in
	// flight and frees it (the handle is dead afterwards).
	commAbort(comm uintptr) error
}

// ncclDataType and ncclRedOp are NCCL's enums (nccl.h).
type (
	ncclDataType int32
	ncclRedOp    int32
)

const (
	ncclInt32    ncclDataType = 2
	ncclFloat16  ncclDataType = 6
	ncclFloat32  ncclDataType = 7
	ncclFloat64  ncclDataType = 8
	ncclBfloat16 ncclDataType = 9

	ncclSum ncclRedOp = 0
	ncclMax ncclRedOp = 2
	ncclMin ncclRedOp = 3
	ncclAvg ncclRedOp = 4
)

func (t ncclDataType) size() int {
	switch t {
	case ncclFloat16, ncclBfloat16:
		return 2
	case ncclFloat64:
		return 8
	}
	return 4
}
