package cuda

import (
	"errors"
	"fmt"
)

// Errors Open returns, for errors.Is. Each comes wrapped with the details
// (library names, driver version, device) and what to do next.
var (
	// ErrNoDriver: libcuda.so.1 could not be loaded (no NVIDIA driver on this machine).
	ErrNoDriver = errors.New("no NVIDIA driver")
	// ErrNoDevice: the driver loaded but reports no usable GPU.
	ErrNoDevice = errors.New("no CUDA device")
	// ErrDriverTooOld: the driver cannot JIT our PTX (ISA 7.8 needs R520 / CUDA 11.8 or newer).
	ErrDriverTooOld = errors.New("NVIDIA driver too old")
	// ErrNoCUBLAS: no libcublas.so.13, .12 or .11 could be loaded.
	ErrNoCUBLAS = errors.New("no cuBLAS library")
	// ErrNoNCCL: libnccl.so.2 could not be loaded.
	ErrNoNCCL = errors.New("no NCCL library")
)

// OutOfMemoryError is what Alloc panics with when the GPU does not have the memory
// asked for (Alloc cannot return an error: the kernels.Backend contract). Callers
// that want one clear line recover it and print Error().
type OutOfMemoryError struct {
	Device      string
	Asked       int64 // bytes
	Free, Total uint64
}

func (e *OutOfMemoryError) Error() string {
	return fmt.Sprintf("cuda: out of GPU memory on %s: asked for %s with %s free of %s; lower batch_size (or use gradient accumulation) or a smaller model",
		e.Device, gib(uint64(e.Asked)), gib(e.Free), gib(e.Total))
}

func gib(b uint64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }

// Result is a CUresult, the driver API's status code.
type Result int32

func (r Result) Error() string {
	if n, ok := resultNames[int32(r)]; ok {
		return n
	}
	return fmt.Sprintf("CUDA error %d", int32(r))
}

// cuCheck turns a CUresult into an error naming the call.
func cuCheck(call string, r int32) error {
	if r == 0 {
		return nil
	}
	return fmt.Errorf("cuda: %s: %w", call, Result(r))
}

// The CUresult values the code looks at.
const (
	errOutOfMemory        = 2
	errNoDevice           = 100
	errNoBinaryForGPU     = 209
	errInvalidPTX         = 218
	errUnsupportedPTXVers = 222
	errStubLibrary        = 34
	errNotReady           = 600
	errLaunchTimeout      = 702
)

// resultNames are the CUresult names of CUDA 11.8's cuda.h.
var resultNames = map[int32]string{
	1:   "CUDA_ERROR_INVALID_VALUE",
	2:   "CUDA_ERROR_OUT_OF_MEMORY",
	3:   "CUDA_ERROR_NOT_INITIALIZED",
	4:   "CUDA_ERROR_DEINITIALIZED",
	5:   "CUDA_ERROR_PROFILER_DISABLED",
	6:   "CUDA_ERROR_PROFILER_NOT_INITIALIZED",
	7:   "CUDA_ERROR_PROFILER_ALREADY_STARTED",
	8:   "CUDA_ERROR_PROFILER_ALREADY_STOPPED",
	34:  "CUDA_ERROR_STUB_LIBRARY",
	46:  "CUDA_ERROR_DEVICE_UNAVAILABLE",
	100: "CUDA_ERROR_NO_DEVICE",
	101: "CUDA_ERROR_INVALID_DEVICE",
	102: "CUDA_ERROR_DEVICE_NOT_LICENSED",
	200: "CUDA_ERROR_INVALID_IMAGE",
	201: "CUDA_ERROR_INVALID_CONTEXT",
	202: "CUDA_ERROR_CONTEXT_ALREADY_CURRENT",
	205: "CUDA_ERROR_MAP_FAILED",
	206: "CUDA_ERROR_UNMAP_FAILED",
	207: "CUDA_ERROR_ARRAY_IS_MAPPED",
	208: "CUDA_ERROR_ALREADY_MAPPED",
	209: "CUDA_ERROR_NO_BINARY_FOR_GPU",
	210: "CUDA_ERROR_ALREADY_ACQUIRED",
	211: "CUDA_ERROR_NOT_MAPPED",
	212: "CUDA_ERROR_NOT_MAPPED_AS_ARRAY",
	213: "CUDA_ERROR_NOT_MAPPED_AS_POINTER",
	214: "CUDA_ERROR_ECC_UNCORRECTABLE",
	215: "CUDA_ERROR_UNSUPPORTED_LIMIT",
	216: "CUDA_ERROR_CONTEXT_ALREADY_IN_USE",
	217: "CUDA_ERROR_PEER_ACCESS_UNSUPPORTED",
	218: "CUDA_ERROR_INVALID_PTX",
	219: "CUDA_ERROR_INVALID_GRAPHICS_CONTEXT",
	220: "CUDA_ERROR_NVLINK_UNCORRECTABLE",
	221: "CUDA_ERROR_JIT_COMPILER_NOT_FOUND",
	222: "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
	223: "CUDA_ERROR_JIT_COMPILATION_DISABLED",
	224: "CUDA_ERROR_UNSUPPORTED_EXEC_AFFINITY",
	300: "CUDA_ERROR_INVALID_SOURCE",
	301: "CUDA_ERROR_FILE_NOT_FOUND",
	302: "CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND",
	303: "CUDA_ERROR_SHARED_OBJECT_INIT_FAILED",
	304: "CUDA_ERROR_OPERATING_SYSTEM",
	400: "CUDA_ERROR_INVALID_HANDLE",
	401: "CUDA_ERROR_ILLEGAL_STATE",
	500: "CUDA_ERROR_NOT_FOUND",
	600: "CUDA_ERROR_NOT_READY",
	700: "CUDA_ERROR_ILLEGAL_ADDRESS",
	701: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
	702: "CUDA_ERROR_LAUNCH_TIMEOUT",
	703: "CUDA_ERROR_LAUNCH_INCOMPATIBLE_TEXTURING",
	704: "CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED",
	705: "CUDA_ERROR_PEER_ACCESS_NOT_ENABLED",
	708: "CUDA_ERROR_PRIMARY_CONTEXT_ACTIVE",
	709: "CUDA_ERROR_CONTEXT_IS_DESTROYED",
	710: "CUDA_ERROR_ASSERT",
	711: "CUDA_ERROR_TOO_MANY_PEERS",
	712: "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED",
	713: "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED",
	714: "CUDA_ERROR_HARDWARE_STACK_ERROR",
	715: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	716: "CUDA_ERROR_MISALIGNED_ADDRESS",
	717: "CUDA_ERROR_INVALID_ADDRESS_SPACE",
	718: "CUDA_ERROR_INVALID_PC",
	719: "CUDA_ERROR_LAUNCH_FAILED",
	720: "CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE",
	800: "CUDA_ERROR_NOT_PERMITTED",
	801: "CUDA_ERROR_NOT_SUPPORTED",
	802: "CUDA_ERROR_SYSTEM_NOT_READY",
	803: "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH",
	804: "CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE",
	805: "CUDA_ERROR_MPS_CONNECTION_FAILED",
	806: "CUDA_ERROR_MPS_RPC_FAILURE",
	807: "CUDA_ERROR_MPS_SERVER_NOT_READY",
	808: "CUDA_ERROR_MPS_MAX_CLIENTS_REACHED",
	809: "CUDA_ERROR_MPS_MAX_CONNECTIONS_REACHED",
	810: "CUDA_ERROR_MPS_CLIENT_TERMINATED",
	900: "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
	901: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
	902: "CUDA_ERROR_STREAM_CAPTURE_MERGE",
	903: "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
	904: "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
	905: "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
	906: "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
	907: "CUDA_ERROR_CAPTURED_EVENT",
	908: "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
	909: "CUDA_ERROR_TIMEOUT",
	910: "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
	911: "CUDA_ERROR_EXTERNAL_DEVICE",
	912: "CUDA_ERROR_INVALID_CLUSTER_SIZE",
	999: "CUDA_ERROR_UNKNOWN",
}
