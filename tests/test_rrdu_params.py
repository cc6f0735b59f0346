"""params.yaml's rrdu section: valid as shipped at both scales, the paper's values at paper scale, and every bad
value (p outside [0, 1], rho <= 0, L <= 0, more poison than a client holds, a target class outside the dataset)
stops with one line naming the key, before any work."""

from __future__ import annotations

import copy

import pytest
import torch

from unlearning.config import ParamsError, check_params, section_config


def test_shipped_rrdu_section_is_the_papers_configuration(params):
    for scale in ("quick", "paper"):
        check_params({**copy.deepcopy(params), "scale": scale})
    paper = section_config({**params, "scale": "paper"}, "rrdu")
    assert (paper["clients"], paper["train"]["hops"], paper["unlearn"]["hops"]) == (10, 100, 100)
    assert (paper["train"]["batch_size"], paper["train"]["lr"], paper["unlearn"]["lr"]) == (64, 0.005, 0.005)
    assert (paper["unlearn"]["p"], paper["unlearn"]["s"], paper["unlearn"]["epsilon"]) == (0.1, 4, 1.0)
    assert paper["datasets"]["mnist"]["rho"] == 10.82 and paper["datasets"]["cifar10"]["L"] == 0.2
    assert paper["datasets"]["fashion_mnist"]["rho"] == 10.82  # the stand-in takes MNIST's Table 12 values
    assert paper["sweeps"]["rho"] == [5.0, 10.0, 25.0, 50.0, 60.0] and paper["table3"]["ps"] == [0.0, 0.1, 1.0]


BAD = [
    (lambda c: c["unlearn"].update(p=1.5), "unlearn.p", "<= 1"),
    (lambda c: c["unlearn"].update(p=-0.1), "unlearn.p", ">= 0"),
    (lambda c: c["table3"].update(ps=[0.0, 2.0]), "table3.ps.1", "<= 1"),
    (lambda c: c["datasets"]["fashion_mnist"].update(rho=0), "datasets.fashion_mnist.rho", "> 0"),
    (lambda c: c["sweeps"].update(rho=[5.0, -1.0]), "sweeps.rho", "> 0"),
    (lambda c: c["datasets"]["mnist"].update(L=0), "datasets.mnist.L", "> 0"),
    (lambda c: c["sweeps"].update(L=[0.0]), "sweeps.L", "> 0"),
    (lambda c: c["backdoor"].update(poisoned=6000), "rrdu.backdoor.poisoned", "fewer than"),
    (lambda c: c["quick"].update(train_per_client=200) or c["backdoor"].update(poisoned=250),
     "rrdu.backdoor.poisoned", "fewer than 200"),
    (lambda c: c["backdoor"].update(target=10), "rrdu.backdoor.target", "0..9"),
    (lambda c: c["backdoor"].update(client=10), "rrdu.backdoor.client", "0..9"),
    (lambda c: c["unlearn"].update(semantics="sgd"), "unlearn.semantics", "adam"),
    (lambda c: c["datasets"]["cifar10"].update(model="flnet"), "rrdu.datasets.cifar10.model", "resnet18_bn"),
]


@pytest.mark.parametrize("edit, key, valid", BAD)
def test_bad_rrdu_value_is_one_line_naming_the_key(params, edit, key, valid):
    bad = copy.deepcopy(params)
    edit(bad["rrdu"])
    with pytest.raises(ParamsError) as err:
        check_params(bad)
    message = str(err.value)
    assert "\n" not in message and key in message and valid in message, message


def test_the_step_refuses_more_poison_than_the_client_holds(params, tmp_path):
    """The runtime check behind the config check: u's eligible (non-target) images bound m."""
    from unlearning.data.sources.synthetic import synthetic
    from unlearning.experiments.rrdu import steps
    from unlearning.files import save_tensors

    path = tmp_path / "synthetic.safetensors"
    save_tensors(path, synthetic(0))
    p = copy.deepcopy(params)
    p["rrdu"].update(datasets={"synthetic": p["rrdu"]["datasets"]["mnist"]}, clients=4, train_per_client=30,
                     quick={}, seeds=[0])
    p["rrdu"]["backdoor"]["poisoned"] = 29  # 30 images, ~27 of them not the target
    with pytest.raises(ValueError, match=r"^rrdu\.backdoor\.poisoned: 29 poisoned copies.*valid: 1\.\.\d+"):
        steps.make_setup(p, "synthetic", 0, str(path))
    p["rrdu"]["backdoor"]["poisoned"] = None
    setup = steps.make_setup(p, "synthetic", 0, str(path))
    assert setup.m == 5 and setup.n_u == 35 and bool(setup.forget.poisoned.all())
    assert bool((setup.forget.y == 0).all())  # relabelled to the target
    x, _ = setup.forget.batch(torch.arange(2).numpy())
    assert bool((x[:, :, 24:27, 24:27] == 1).all())  # the trigger, stamped at the lower right
