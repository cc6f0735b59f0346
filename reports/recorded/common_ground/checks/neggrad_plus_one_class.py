# Run from the recording's working directory (its artifacts/ holds the stored originals), with PYTHONPATH at src/:
# NegGrad+ on client removal again, and each remaining model's top-class share on the test set (output: the .txt).
import torch
from pathlib import Path
from torch.func import functional_call
from unlearning.config import load_checked
from unlearning.experiments.common_ground import decentralized as dec, layout, parts, families, config
params = load_checked("/work/scratch/cg_canary/params.yaml")
features = "data/features/fashion_mnist.safetensors"
info = dec.configured_methods(params, "client", ["neggrad_plus"])["neggrad_plus"]
budget = config(params)["budget"]
for seed in (0, 1, 2):
    setup, judge = parts._judge(params, "client", seed, features, ".")
    state = families.load(info.original, dec.context(params, "client", seed, features, setup, Path(layout.family_root("client", seed, "."))))
    mcfg = dec.method_config(state.setup.cfg, budget, info)
    res = info(state, setup.request, mcfg)
    shares = []
    for row in res.theta:
        logits = functional_call(setup.model, setup.spec.unflatten(row), (setup.x_test,))
        counts = torch.bincount(logits.argmax(1), minlength=setup.classes).float()
        shares.append(round(float(counts.max() / counts.sum()), 3))
    acc = [round(float((functional_call(setup.model, setup.spec.unflatten(r), (setup.x_test,)).argmax(1) == setup.y_test).float().mean()), 3) for r in res.theta]
    print("seed", seed, "top-class share per remaining client", shares, "test acc", acc, flush=True)
