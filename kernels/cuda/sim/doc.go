// Package sim runs PTX on the CPU: a functional simulator of an NVIDIA GPU
// (sm_80, PTX ISA up to 7.8 as nvcc 11.8 writes it) for testing the CUDA
// backend where no GPU is, done strictly, since a lenient simulator proves
// nothing. GPGPU-Sim's functional mode and Ocelot's emulator did this in C++
// for all of PTX; this package does the subset our kernels use, and says so
// when a kernel steps outside it.
//
// # Use
//
//	m, err := sim.Parse("layernorm.ptx", src)     // syntax only
//	dev := sim.NewDevice(sim.Config{Seed: 1})
//	im, err := dev.Load(m)                         // decode; unknown instructions fail here
//	k, err := im.Kernel("layernorm_forward")
//	a, err := dev.Mem.Allocate(n, "device")        // device memory is Go memory
//	err = k.Launch(sim.LaunchConfig{Grid: sim.Dim3{X: 8, Y: 1, Z: 1}, Block: sim.Dim3{X: 256, Y: 1, Z: 1}, Args: ...})
//
// kernels/cuda builds the simulated driver, cuBLAS and NCCL on it (Options.Sim,
// --device cuda-sim).
//
// # How it runs
//
// Parse turns the text into statements; Load decodes each kernel once into a
// compact program: registers become slots of a per-warp register file
// ([32]uint64 per register, predicates a 32-bit mask each), constants and
// special registers become slots filled when a warp starts, labels become
// instruction indices, and each instruction gets the Go function for its exact
// opcode, types and modifiers (ops_gen.go holds the generated loops of the
// common ones). Launch then runs the grid block by block; within a block each
// warp executes instruction by instruction over its 32 lanes under an active
// mask. Divergent lanes wait at their own pc and the group with the lowest pc
// runs first, so paths reconverge where the compiler's structured code joins.
// A warp runs until all its threads wait at a barrier or have exited; between
// barriers the warps of a block run in a seeded random order, blocks too, so a
// missing bar.sync changes results (or reads unwritten shared memory) and fails.
//
// # Strictness
//
//   - An instruction, type or modifier not listed below is an error at Load,
//     naming the module, line, kernel and opcode.
//   - A global access outside every live allocation, past the end of one, or
//     not aligned to its size; a shared access outside the block's shared
//     memory; a local access outside the thread's: a *Fault naming kernel,
//     PTX line, block, thread and address.
//   - Reading shared memory no thread of the block wrote since the launch
//     began is a fault; so is touching bytes a cp.async is still writing.
//   - bar.sync reached by only part of the block (some threads exited or
//     branched around it), by a warp at two different bar.sync instructions,
//     or with a thread count other than the block's: a fault.
//   - shfl.sync, vote.sync, redux.sync and bar.warp.sync whose membermask
//     names a thread that is not executing the same instruction (exited,
//     diverged, nonexistent), or that a thread outside the mask executes, and
//     shfl reading a lane outside the mask: a fault. ldmatrix and mma.sync need
//     all 32 threads converged.
//   - bra.uni whose guard differs across the active threads, integer division
//     by zero, and trap are faults.
//   - Atomics of a warp apply in a seeded random order; the .approx math
//     returns results moved within the PTX ISA's stated error bound (see
//     approx.go) unless Config.ExactApprox.
//
// # Coverage
//
// Integer: add sub mul (.lo .hi .wide) mad (.lo .hi .wide, .sat) div rem abs
// neg min max popc clz brev bfe bfi bfind prmt (all modes) lop3 shf sad and or
// xor not cnot shl shr, on 16-, 32- and 64-bit types (and .pred logic).
// Floating point: add sub mul fma mad div (.rn .rz .rm .rp, .approx, .full)
// rcp sqrt (rounded and .approx) rsqrt ex2 lg2 sin cos tanh (.approx) abs neg
// min max (.NaN) copysign testp, .ftz and .sat, on .f32 and .f64; add sub mul
// fma neg abs min max (.relu, .sat) and ex2/tanh .approx on .f16 .bf16
// .f16x2 .bf16x2. Comparison: setp (every comparison, .and/.or/.xor with a
// predicate, p|q), selp, set. Conversion: cvt between every integer and float
// type with every rounding mode (.rn .rz .rm .rp .rna, .rni .rzi .rmi .rpi),
// .sat, .satfinite, .relu, .ftz, packing to .f16x2/.bf16x2, .tf32. Movement:
// mov (with vector packing and unpacking), ld and st (.global .shared .local
// .param .const and generic; .v2 .v4; .nc; cache hints accepted), ldu, cvta,
// isspacep, prefetch. Atomics: atom and red (add min max inc dec and or xor
// exch cas on the types PTX allows). Warp: shfl.sync (up down bfly idx),
// vote.sync (all any uni ballot), redux.sync, activemask, bar.warp.sync,
// ldmatrix.sync.aligned.m8n8 (.x1 .x2 .x4, .trans), mma.sync.aligned
// m16n8k16 and m16n8k8 .row.col with .f16/.bf16 inputs (.f32 or .f16
// accumulators) and m16n8k8 .tf32. Asynchronous copies: cp.async.ca/.cg
// .shared.global with zero-fill, commit_group, wait_group, wait_all. Control:
// bra (.uni), ret, exit, bar.sync / barrier.sync (.aligned), membar, fence,
// trap, nanosleep. Special registers: %tid %ntid %ctaid %nctaid %laneid
// %warpid %nwarpid %smid %nsmid %lanemask_* %clock %dynamic_smem_size.
// Not simulated: device function calls (call, .param in bodies), textures,
// surfaces, partial and named producer/consumer barriers (bar.arrive),
// mbarrier and the TMA/bulk copies, wgmma, video instructions, extended
// precision (.cc).
//
// # Adding an instruction
//
// Write its decoder beside its family's (decode_int.go, decode_float.go,
// decode_cmp.go, decode_cvt.go, decode_mem.go, decode_sync.go) and register it
// in opDecoders (decode_ops.go): consume the modifiers it accepts from mods
// (what is left over is reported as unsupported), check the types, resolve the
// operands with d.ops, d.src, d.dst, d.pred and d.addr, and set in.fn to the
// function that runs it for the lanes of a mask. A plain register-to-register
// operation is one line in gen_ops.go's table (then go generate); anything
// else is a function in alu.go, mem.go or warpops.go. Add a test with
// hand-written PTX to the instr_*_test.go of its family that checks it against
// values worked out from the PTX ISA, and, when it can fault, a fault test.
//
// Written by hand rather than wrapping GPGPU-Sim: a C++ simulator would need
// cgo and a CUDA toolkit at build time, which the project avoids everywhere.
package sim

//go:generate go run gen_ops.go
