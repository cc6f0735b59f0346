"""float32 square root, logarithm and tanh whose bits do not depend on the CPU's vendor (issue 53).

On the CPU, ATen computes float32 sqrt, exp, log, tanh, erf and the other functions MKL implements
(aten/src/ATen/cpu/vml.h) with MKL's vector math (VML). Its float32 results are not correctly rounded, and an
AMD EPYC takes another path than an Intel Xeon whatever `MKL_CBWR` says: under the regression's `portable` setting
the two recorded CPUs differ in exactly these functions (tests/regression/README.md, "The leak"). MKL's float64
functions honour `MKL_CBWR` on both, and they are faithful (error below one float64 ulp), which is 2^29 times finer
than float32's: their result rounded to float32 is the correctly rounded square root (sqrt cannot fall within
2^-50 of a float32 midpoint), and for log and tanh the float32 bits differ only where the float64 paths do and the
value lies within one float64 ulp of a float32 midpoint. So these functions compute float32 CPU tensors through
float64; other devices and dtypes call torch directly (CUDA's float32 sqrt is correctly rounded, so both give the
IEEE result). Autograd flows through the casts.
"""

from __future__ import annotations

from collections.abc import Callable

import torch


def _via_float64(op: Callable[[torch.Tensor], torch.Tensor], t: torch.Tensor) -> torch.Tensor:
    if t.dtype == torch.float32 and t.device.type == "cpu":
        return op(t.double()).to(torch.float32)
    return op(t)


def sqrt(t: torch.Tensor) -> torch.Tensor:
    """The IEEE (correctly rounded) square root of `t` on every CPU and CUDA."""
    return _via_float64(torch.sqrt, t)


def log(t: torch.Tensor) -> torch.Tensor:
    """The natural logarithm of `t`; float32 CPU tensors through float64 (module docstring)."""
    return _via_float64(torch.log, t)


def tanh(t: torch.Tensor) -> torch.Tensor:
    """tanh of `t`; float32 CPU tensors through float64 (module docstring)."""
    return _via_float64(torch.tanh, t)
