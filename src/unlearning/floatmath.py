"""float32 square root, logarithm and tanh whose bits do not depend on the CPU's vendor (issue 53).

On the CPU, ATen computes float32 sqrt, exp, log, tanh, erf and the other functions MKL implements
(aten/src/ATen/cpu/vml.h) with MKL's vector math (VML). Its float32 results are not correctly rounded, and an
AMD EPYC takes another path than an Intel Xeon whatever `MKL_CBWR` says: under the regression's `portable` setting
the two recorded CPUs differ in the probe's family of these functions and in Adam, whose only such call is its sqrt
(tests/regression/README.md, "The leak"). MKL's float64
functions honour `MKL_CBWR` on both, and they are faithful (error below one float64 ulp), which is 2^29 times finer
than float32's: their result rounded to float32 is the correctly rounded square root (sqrt cannot fall within
2^-50 of a float32 midpoint), and for log and tanh the float32 bits differ only where the float64 paths do and the
value lies within one float64 ulp of a float32 midpoint. So these functions compute float32 CPU tensors through
float64; other devices and dtypes call torch directly (CUDA's float32 sqrt is correctly rounded, so both give the
IEEE result). Autograd flows through the casts. Outside autograd, sqrt takes numpy's float32 square root instead: the
hardware's IEEE instruction, the same bits at a fraction of the cost.

`VendorDependentCalls` counts the float32 CPU calls of MKL's functions while a step runs (by aten function), to
check that a method, a loss or an optimizer computes none (tests/test_floatmath.py runs the project's steps under it).
"""

from __future__ import annotations

import collections
from collections.abc import Callable

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode

# the functions ATen computes with MKL's vector math on the CPU (aten/src/ATen/cpu/vml.h), as aten names
VML_FUNCTIONS = frozenset({"sqrt", "exp", "log", "tanh", "erf", "erfc", "erfinv", "sin", "cos", "tan", "asin",
                           "acos", "atan", "log10", "log2"})


def _via_float64(op: Callable[[torch.Tensor], torch.Tensor], t: torch.Tensor) -> torch.Tensor:
    if t.dtype == torch.float32 and t.device.type == "cpu":
        return op(t.double()).to(torch.float32)
    return op(t)


def sqrt(t: torch.Tensor) -> torch.Tensor:
    """The IEEE (correctly rounded) square root of `t` on every CPU and CUDA. A float32 CPU tensor outside autograd
    and torch.func takes numpy's sqrt (the hardware's IEEE instruction at every SIMD width): the same bits as the
    float64 route, 8 times faster on FLNet's Adam (benchmarks/results/floatmath_cpu.json)."""
    if (t.dtype == torch.float32 and t.device.type == "cpu" and not t.requires_grad
            and not torch._C._functorch.is_functorch_wrapped_tensor(t)):
        with np.errstate(invalid="ignore"):  # a negative entry gives NaN, as torch.sqrt does
            return torch.from_numpy(np.asarray(np.sqrt(t.numpy())))  # a 0-dim one too
    return _via_float64(torch.sqrt, t)


def log(t: torch.Tensor) -> torch.Tensor:
    """The natural logarithm of `t`; float32 CPU tensors through float64 (module docstring)."""
    return _via_float64(torch.log, t)


def tanh(t: torch.Tensor) -> torch.Tensor:
    """tanh of `t`; float32 CPU tensors through float64 (module docstring)."""
    return _via_float64(torch.tanh, t)


class VendorDependentCalls(TorchDispatchMode):
    """Within `with VendorDependentCalls() as calls:`, `calls.counts` counts the aten calls of VML_FUNCTIONS (in place,
    out= and foreach variants included) on float32 CPU tensors, autograd's backward included; pow(x, 0.5) is sqrt."""

    def __init__(self):
        super().__init__()
        self.counts: collections.Counter[str] = collections.Counter()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func.overloadpacket.__name__.strip("_").removeprefix("foreach_")
        if name in VML_FUNCTIONS or (name == "pow" and len(args) > 1 and isinstance(args[1], float)
                                     and args[1] == 0.5):
            tensors = [a for a in args if isinstance(a, torch.Tensor)] + [
                t for a in args if isinstance(a, (list, tuple)) for t in a if isinstance(t, torch.Tensor)]
            if any(t.dtype == torch.float32 and t.device.type == "cpu" for t in tensors):
                self.counts[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))
