// Package cuda is the GPU backend of kernels.Backend: CUDA C kernels (the .cu
// files beside this one, compiled to PTX by `make ptx` and embedded), cuBLAS for
// the matmuls, NCCL for data-parallel collectives.
//
// Nothing CUDA is needed to build or test it. libcuda.so.1, libcublas.so.{13,12,11}
// and libnccl.so.2 are opened at run time with dlopen through
// github.com/ebitengine/purego (no cgo, no CUDA headers), so one binary runs on CPU
// and GPU nodes alike and `go build ./...` works anywhere. Open fails with a one-line
// error (no driver, no device, driver too old for the PTX) that callers can show as
// is or use to fall back to the CPU backend; the bindings are hand-written because
// they are a few dozen functions and the usual Go CUDA bindings (gorgonia.org/cu)
// link libcuda at build time and exit the process in init when there is no device.
//
// # Three interfaces, two implementations each
//
// The backend reaches the GPU only through driverAPI (the driver: devices,
// contexts, streams, events, modules, launches, memory, copies), blasAPI (one
// gemm description covering cublasGemmEx, the strided batched form and
// cuBLASLt's epilogues) and ncclAPI (unique ids, communicators, all-reduce,
// broadcast, reduce-scatter, all-gather); api.go declares them. driver_real.go,
// cublas.go and nccl.go are the libraries loaded with purego; sim_driver.go,
// sim_blas.go and sim_nccl.go are a simulated GPU (Options.Sim, --device
// cuda-sim): the same committed PTX runs instruction by instruction on
// kernels/cuda/sim, device memory is Go memory whose every access is checked,
// streams are queues that run when something waits for them, the GEMM is a
// reference that honours every argument, and NCCL reduces between the ranks of
// one process or, across processes, through a Transport (train/dist's
// communicator). Everything above the interfaces, the ops, memory management
// and launches, is the same code on both, so the simulator tests the backend,
// not a model of it. docs/cuda-sim.md says what is simulated and how strictly.
//
// Data parallel: NCCL, one process per GPU. Devices lists the GPUs a process
// sees with their UUIDs and PCI bus ids (device_id.go), so that each rank can
// pick its own and two ranks on one GPU can be caught. Every collective is
// watched (nccl_watch.go): queued between two events and polled, with
// ncclCommGetAsyncError, against a deadline (NCCLOptions.Timeout); an error
// or a deadline passed aborts the communicator (ncclCommAbort) and returns an
// error, and a CollectiveWatch (train/dist's communicator) hears of each
// collective so that the rank that never reached one can be named. The
// simulated GPU can be made to hang or its NCCL to fail (InjectSimFault), which
// is how CI shows all of this.
//
// Memory: tensors are plain device memory (cuMemAlloc) from a caching allocator
// (memory.go); no managed memory. Data moves only through Upload and Download;
// small uploads (the batch's token ids) are staged through pinned memory and run
// asynchronously in stream order. Ops run in order on one stream.
//
// Numerics: kernels compute in float32 on activations of float32, bfloat16 or
// float16 (each kernel is instantiated per type, common.cuh); attention is
// FlashAttention-2 on the tensor cores (mma.sync) for bfloat16 and float16 with
// head sizes 16, 32, 64 and 128, and a float32 warp-per-row kernel otherwise.
// The matmuls go through cuBLAS (cuBLASLt with the bias and GELU as epilogues)
// with the tensors' own types and float32 accumulation; float32 operands use the compute type chosen by
// Options.Precision: bf16 (CUBLAS_COMPUTE_32F_FAST_16BF, the default), tf32, or
// fp32 (no tensor cores; passes the kerneltest suite's float32 tolerances).
// Reductions use a fixed summation order (no atomics), so a run is repeatable
// on the same GPU.
package cuda
