# The float32 GELU derivative (kernels/cuda/common.cuh gelu_grad's formula) on the GPU
# through PyTorch, against the same formula in float64: how much of the GPU check's
# float32 GELU-backward failures the formula itself explains (2026-11-26 on an H100:
# max abs error 5.8e-8 near the derivative's root, as on the CPU: none of the ~6e-7).
# On the device machine: /opt/torch/.venv/bin/python3 tools/gpu/gelu_diag.py
import torch, os
d = torch.device("cuda")
S = 0.7978845608028654
def grad32(x):
    u = S * (x + 0.044715 * x * x * x)
    s = 1.0 / (1.0 + torch.exp(-2.0 * u))
    du = S * (1.0 + 3.0 * 0.044715 * x * x)
    return s * (1.0 + 2.0 * x * (1.0 - s) * du)
x64 = torch.linspace(-3, 3, 2_000_001, dtype=torch.float64)
x32 = x64.to(torch.float32)
ref = grad32(x32.double())            # the same formula in float64, on the float32 inputs
gpu = grad32(x32.to(d)).double().cpu()
cpu = grad32(x32).double()
for name, v in (("gpu fp32", gpu), ("cpu fp32", cpu)):
    err = (v - ref).abs()
    i = int(err.argmax())
    print(f"{name}: max abs error {err.max().item():.3e} at x={x32[i].item():.6f} (grad {ref[i].item():.3e}); mean abs {err.mean().item():.3e}")
near = (ref.abs() < 1e-4)
print("near the root (|grad|<1e-4):", int(near.sum()), "points; gpu max abs err", f"{(gpu-ref)[near].abs().max().item():.3e}", "cpu", f"{(cpu-ref)[near].abs().max().item():.3e}")
