"""Which CPU code paths the numerical libraries take, and the settings that pin them.

A CPU's vector width and vendor decide the last bits of torch's (ATen's kernels, MKL, oneDNN), numpy's, OpenBLAS's
and glibc's libm floating point; a short training amplifies them like a new seed. Each library reads an environment
variable when it loads that pins its code path. `SETTINGS` names the ones this project measures
(tests/regression/README.md); `portable` is a path every x86-64-v2 CPU has, under which the golden files were written:

    env $(python -m unlearning.isa portable) snakemake --cores all    # the golden files' bits

tests/regression/isa_probe.py checks, operation by operation, that a machine computes the recorded bits under it.
No variable pins MKL's float32 vector math (ATen's float32 sqrt, exp, log, tanh, erf on the CPU), whose path follows
the CPU's vendor even under MKL_CBWR=COMPATIBLE: the project computes those through unlearning.floatmath instead.
"""

from __future__ import annotations

import os
import sys

NUMPY_DISPATCH = "X86_V3,X86_V4,AVX512_ICL,AVX512_SPR"  # numpy 2.4's targets beyond its x86-64-v2 baseline
# torch's libraries on a path each x86-64 CPU has: ATen's unvectorised kernels, MKL's conditional numerical
# reproducibility in its compatible (SSE2) branch, oneDNN's SSE4.1 kernels (the setting of issue 41's probe)
TORCH_PORTABLE = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41"}
SETTINGS: dict[str, dict[str, str]] = {
    "native": {},  # whatever the CPU offers
    "avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2"},  # a CPU without AVX-512 (MKL_CBWR acts on Intel's)
    "mkl_compatible": {"MKL_CBWR": "COMPATIBLE"},  # MKL alone on its vendor-neutral path
    "torch_portable": TORCH_PORTABLE,
    # and the rest: numpy's baseline, OpenBLAS's Nehalem kernels, glibc's libm without its FMA variants (ATen's
    # unvectorised kernels call libm, which picks an FMA variant where the CPU has FMA; glibc < 2.33 names end in
    # _Usable)
    "portable": {**TORCH_PORTABLE, "NPY_DISABLE_CPU_FEATURES": NUMPY_DISPATCH, "OPENBLAS_CORETYPE": "Nehalem",
                 "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2_Usable,-FMA_Usable,-AVX2,-FMA,-FMA4"},
    # the same at the x86-64-v3 level (AVX2 and FMA, every x86 CPU since 2013-2015): ATen's and oneDNN's AVX2
    # kernels, MKL's AVX2 branch of conditional numerical reproducibility, numpy without its AVX-512 targets,
    # OpenBLAS's Haswell kernels; glibc's libm takes its FMA variants on every such CPU
    "portable_avx2": {"ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2", "ONEDNN_MAX_CPU_ISA": "AVX2",
                      "NPY_DISABLE_CPU_FEATURES": "X86_V4,AVX512_ICL,AVX512_SPR", "OPENBLAS_CORETYPE": "Haswell"},
}
VARIABLES = sorted({key for setting in SETTINGS.values() for key in setting})


def environment(setting: str, base: dict[str, str] | None = None) -> dict[str, str]:
    """`base` (default: this process's environment) with every variable of SETTINGS replaced by `setting`'s."""
    if setting not in SETTINGS:
        raise ValueError(f"CPU setting {setting!r}: unknown; valid: {', '.join(SETTINGS)}")
    base = dict(os.environ if base is None else base)
    return {**{k: v for k, v in base.items() if k not in VARIABLES}, **SETTINGS[setting]}


def in_effect() -> dict[str, str | None]:
    """The pinning variables as this process sees them (None: unset, the library's native path)."""
    return {key: os.environ.get(key) for key in VARIABLES}


def setting_of(variables: dict[str, str | None]) -> str:
    """The name of the setting whose variables are exactly those set in `variables` (as in_effect returns them),
    else "custom"."""
    given = {k: v for k, v in variables.items() if v is not None}
    return next((name for name, setting in SETTINGS.items() if setting == given), "custom")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1 or args[0] not in SETTINGS:
        print(f"usage: python -m unlearning.isa SETTING   (SETTING: {', '.join(SETTINGS)}); prints KEY=VALUE lines",
              file=sys.stderr)
        return 2
    print("\n".join(f"{k}={v}" for k, v in SETTINGS[args[0]].items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
