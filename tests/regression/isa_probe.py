"""What each CPU setting of unlearning.isa computes: the probe behind the regression's pinned code paths.

One hash per operation family of the quick scale (GEMMs, convolutions, ATen's elementwise maps and reductions,
random draws, the models' gradients looped and under vmap, Adam, SGLU's noisy SGD, numpy, OpenBLAS, scipy,
scikit-learn), on fixed inputs. `portable` is the setting the regression run computes under
(tests/regression/README.md): every x86-64-v2 CPU can take its paths, so every such CPU should compute its bits.

    python tests/regression/isa_probe.py                 # this process: {op: hash}, as JSON
    python tests/regression/isa_probe.py --all --write   # every setting, each in a fresh process: isa_probe.json

`--write` records this machine's hashes (its CPU named) into tests/regression/isa_probe.json; the test
`test_portable_setting_computes_the_recorded_bits` runs the probe under `portable` and compares it with the hashes
recorded there, op by op, so that a machine whose CPU escapes the pinning says which operation does.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

from unlearning import isa

HERE = Path(__file__).resolve().parent
RECORD = HERE / "isa_probe.json"

SETTINGS = isa.SETTINGS
# operation families whose bits follow the CPU's vendor under every setting: recorded as evidence, never compared
# across machines; the project computes none of them (unlearning.floatmath, torch's fused Adam; README "The leak")
VENDOR_DEPENDENT = {
    "mkl_vml_float32": "MKL's float32 vector math (exp, erf, sqrt, log, tanh), which ATen calls: an AMD EPYC and an "
                       "Intel Xeon differ under MKL_CBWR=COMPATIBLE, and on the AMD MKL_CBWR does not move it",
    "adam": "torch.optim.Adam's default (foreach) step takes VML's float32 sqrt",
    "aten_elementwise": "retired 2026-11-28: ATen's float32 maps with exp, erf and sqrt among them (now aten_maps and "
                        "mkl_vml_float32); the family in which the Intel Xeon and the AMD EPYC first differed",
}


# operation families a setting leaves to the CPU by design, so that the setting's check skips them: torch_portable
# sets only torch's libraries' variables (ATen, MKL, oneDNN), and numpy's SIMD dispatch, OpenBLAS's kernel choice and
# glibc's libm (FMA variants, which ATen's unvectorised double kernels call) follow the CPU. An AVX2-only AMD EPYC
# (2026-11-29) computes other numpy and OpenBLAS bits under it than the two AVX-512 machines; under `portable`, which
# pins those too, it computes theirs.
NOT_PINNED_BY = {"torch_portable": {"numpy_ufuncs", "openblas_gemm", "aten_elementwise_double"}}


def _digest(*arrays) -> str:
    h = hashlib.sha1()
    for a in arrays:
        h.update(a.detach().contiguous().numpy().tobytes() if hasattr(a, "detach") else a.tobytes())
    return h.hexdigest()[:12]


def probe(threads: int = 1) -> dict[str, str]:
    """One hash per operation family the quick scale runs, on fixed inputs, at `threads` torch threads."""
    import numpy as np
    import scipy.special
    import torch
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.metrics import roc_auc_score
    from torch.func import functional_call, grad, vmap

    from unlearning import floatmath
    from unlearning.models import build_model
    from unlearning.train.optim import LocalOptimizer

    torch.set_num_threads(threads)
    torch.manual_seed(0)
    out = {}
    # the probe: an MKL GEMM under an ATen tanh, and a oneDNN convolution
    x, w = torch.randn(512, 784), torch.randn(784, 256)
    h = torch.tanh(x @ w)
    y = torch.nn.functional.conv2d(torch.randn(8, 1, 28, 28), torch.randn(16, 1, 5, 5))
    out["issue_41"] = _digest(h, y)  # the hash issue 41 printed on an Intel Xeon, for comparison
    out["gemm_tanh"], out["conv2d"] = _digest(h), _digest(y)
    # generators: torch's vectorised normal fill, uniform, permutations, Bernoulli; numpy's PCG64
    g = torch.Generator().manual_seed(1)
    out["torch_random"] = _digest(torch.randn(10_000, generator=g), torch.rand(10_000, generator=g),
                                  torch.randperm(1000, generator=g), torch.bernoulli(torch.full((999,), 0.3),
                                                                                     generator=g))
    rng = np.random.default_rng(0)
    out["numpy_random"] = _digest(rng.standard_normal(10_000), rng.permutation(1000), rng.integers(0, 10, 999))
    # elementwise maps and reductions of ATen
    v = torch.randn(4099, generator=g, dtype=torch.float32)
    # ATen's own float32 maps (its kernels, glibc's libm), and the float32 functions ATen hands to MKL's vector math
    # (VML): exp, erf, sqrt, log, tanh; VML's float32 path follows the CPU's vendor (VENDOR_DEPENDENT), so the
    # project computes these through unlearning.floatmath, whose bits are hashed beside them
    out["aten_maps"] = _digest(v.sigmoid(), v.abs().log1p(), v.softmax(0), v.log_softmax(0), v.relu(),
                               v.clamp(-0.5, 0.5), v.pow(3))
    out["mkl_vml_float32"] = _digest(v.exp(), torch.erf(v), v.abs().sqrt(), (v.abs() + 1).log(), v.tanh())
    out["floatmath"] = _digest(floatmath.sqrt(v.abs()), floatmath.log(v.abs() + 1), floatmath.tanh(v))
    d = v.double()
    out["aten_elementwise_double"] = _digest(d.exp(), d.abs().log1p(), d.abs().pow(1.7), d.tanh(), d.sin())
    out["aten_reductions"] = _digest(torch.stack([v.sum(), v.mean(), v.norm(), v.logsumexp(0), (v * v).sum(),
                                                  v.double().sum().float(), v.std()]),
                                     torch.randn(64, 300, generator=g).sum(0),
                                     torch.randn(64, 300, generator=g).norm(dim=1))
    # models: loss gradients of the MLP and the small CNN, a client loop and the clients under vmap (batched
    # GEMMs, grouped convolutions), cross-entropy included
    images, labels = torch.randn(4, 32, 1, 28, 28, generator=g), torch.randint(0, 10, (4, 32), generator=g)
    for name in ("mlp", "cnn_small", "cnn"):
        model = build_model(name, (1, 28, 28), 10, mlp_hidden=128)
        params = {k: p.detach() for k, p in model.named_parameters()}
        stacked = {k: p.unsqueeze(0).repeat(4, *[1] * p.dim()) + 0.01 * torch.randn(4, *p.shape, generator=g)
                   for k, p in params.items()}

        def loss(p, xb, yb, model=model):
            return torch.nn.functional.cross_entropy(functional_call(model, p, (xb,)), yb)

        looped = [grad(loss)({k: t[c] for k, t in stacked.items()}, images[c], labels[c]) for c in range(4)]
        out[f"{name}_grad_loop"] = _digest(*[gr[k] for gr in looped for k in sorted(gr)])
        mapped = vmap(grad(loss))(stacked, images, labels)
        out[f"{name}_grad_vmap"] = _digest(*[mapped[k] for k in sorted(mapped)])
    # SGLU's projected noisy SGD, its products batched over trials (minibatch and full batch)
    from unlearning.train import noisy_sgd as sgd

    n, dim, runs = 1024, 784, 16
    feats = torch.randn(n, dim, generator=g)
    feats, signs = feats / feats.norm(dim=1, keepdim=True), torch.randint(0, 2, (n,), generator=g).float() * 2 - 1
    step, sigma = sgd.Step(eta=3.0, lam=2e-3, M=1.0, R=100.0), torch.full((runs,), 0.1)
    for b, count in ((128, 2), (None, 5)):
        gb = torch.Generator().manual_seed(1)
        order = sgd.partitions(4, n, b, gb) if b else None
        out[f"noisy_sgd_b={b or 'full'}"] = _digest(sgd.epochs(sgd.initial(runs, dim, sigma, 2e-3, gb), feats, signs,
                                                               order, sigma, count, step, gb, b))
    # Adam on a small regression: torch's default (foreach; its sqrt is VML's), torch's fused kernel (R2D's CNS) and
    # the project's (train/optim.py: RR-DU's walk, the engine), then a mixing product of 10 stacked clients
    start, target = torch.randn(50, 20, generator=g), torch.randn(30, 20, generator=g)
    batches = [torch.randn(30, 50, generator=g) for _ in range(20)]
    for name, fused in (("adam", None), ("adam_fused", True)):
        p = torch.nn.Parameter(start.clone())
        opt = torch.optim.Adam([p], lr=1e-2, fused=fused)
        for x in batches:
            opt.zero_grad()
            ((x @ p - target) ** 2).mean().backward()
            opt.step()
        out[name] = _digest(p)
    theta, local = start.reshape(1, -1).clone(), LocalOptimizer("adam")
    state = local.init(theta)
    for x in batches:
        p = theta.view(50, 20).clone().requires_grad_(True)
        ((x @ p - target) ** 2).mean().backward()
        u, state = local.step(p.grad.reshape(1, -1), theta, state)
        theta = theta - 1e-2 * u
    out["local_adam"] = _digest(theta)
    mixing = torch.softmax(torch.randn(10, 10, generator=g), 1)
    out["mixing"] = _digest(mixing @ torch.randn(10, 100_000, generator=g))
    m = torch.randn(40, 40, generator=g)
    out["linalg"] = _digest(torch.linalg.solve(torch.eye(40) * 40 + m, torch.randn(40, 3, generator=g)),
                            torch.linalg.eigvalsh(m.T @ m))
    # numpy's ufuncs (SIMD dispatch), OpenBLAS's GEMM, scipy's special functions, scikit-learn's forests and AUC
    a = rng.standard_normal(4099)
    out["numpy_ufuncs"] = _digest(np.exp(a), np.log(np.abs(a) + 1), np.tanh(a), np.sin(a), a.astype(np.float32) ** 3,
                                  np.array([a.sum(), a.mean(), a.std(), np.linalg.norm(a)]), np.sort(a))
    out["openblas_gemm"] = _digest(rng.standard_normal((200, 300)) @ rng.standard_normal((300, 100)))
    out["scipy_special"] = _digest(scipy.special.ndtr(a), scipy.special.ndtri(np.clip(np.abs(a) / 5, 1e-9, 1 - 1e-9)),
                                   scipy.special.logsumexp(a))
    features, member = rng.standard_normal((400, 12)), rng.integers(0, 2, 400)
    forest = RandomForestClassifier(n_estimators=20, random_state=0, n_jobs=1).fit(features, member)
    scores = forest.predict_proba(features)[:, 1]
    out["sklearn_forest_auc"] = _digest(scores, np.array([roc_auc_score(member, scores)]))
    return out


def run_under(setting: str, threads: int = 1) -> dict[str, str]:
    """The probe in a fresh process under SETTINGS[setting] (the variables are read when the libraries load)."""
    done = subprocess.run([sys.executable, __file__, "--threads", str(threads)], env=isa.environment(setting),
                          capture_output=True, text=True)
    if done.returncode:
        raise RuntimeError(f"isa_probe under {setting}: {done.stderr[-2000:]}")
    return json.loads(done.stdout)


def cpu() -> str:
    """This machine's CPU model, as the provenance record names it."""
    import torch

    from unlearning.provenance import device_info

    return device_info(torch.device("cpu"))["name"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--threads", type=int, default=1, help="torch threads of this process's probe")
    parser.add_argument("--all", action="store_true", help="every setting of SETTINGS, each in a fresh process; "
                        "and which operations change between 1 and 2 threads under native and portable")
    parser.add_argument("--write", action="store_true", help=f"record this machine's hashes in {RECORD.name}")
    args = parser.parse_args()
    if not args.all:
        print(json.dumps(probe(args.threads)))
        return
    import torch

    hashes = {name: run_under(name) for name in SETTINGS}
    two = {name: run_under(name, threads=2) for name in ("native", "portable")}
    thread_dependent = {name: sorted(op for op, h in two[name].items() if hashes[name][op] != h) for name in two}
    machine = {"cpu": cpu(), "torch": torch.__version__, "native_capability": torch.backends.cpu.get_cpu_capability()}
    entry = {"machine": machine, "hashes": hashes, "differ_at_2_threads": thread_dependent}
    print(json.dumps(entry, indent=2))
    if args.write:
        record = json.loads(RECORD.read_text()) if RECORD.is_file() else {"settings": {}, "machines": []}
        record["settings"] = SETTINGS
        same = lambda m: (m["cpu"], m["native_capability"]) == (machine["cpu"], machine["native_capability"])  # noqa
        record["machines"] = [m for m in record["machines"] if not same(m["machine"])]  # one entry per CPU and width
        record["machines"].append(entry)
        tmp = RECORD.with_suffix(".tmp")
        tmp.write_text(json.dumps(record, indent=2) + "\n")
        tmp.replace(RECORD)


if __name__ == "__main__":
    main()
