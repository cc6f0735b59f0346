"""params.yaml's cdfl section (DU's recommended configuration): valid as shipped at both scales, and every bad
value stops with one line naming the key."""

from __future__ import annotations

import copy

import pytest
import yaml

from unlearning.__main__ import main
from unlearning.config import ParamsError, check_params, section_config


def test_shipped_cdfl_section_is_the_papers_configuration(params):
    for scale in ("quick", "paper"):
        checked = check_params({**copy.deepcopy(params), "scale": scale})
        cfg = section_config(checked, "cdfl")
        assert cfg["clients"] == 10 and cfg["partition"]["alpha"] == 0.3 and cfg["unlearn"]["class"] == 0
        assert cfg["unlearn"]["epsilon"] == 1.0 and cfg["unlearn"]["delta"] == 1e-5
        assert cfg["unlearn"]["c_eff"] == 0.02064 and cfg["unlearn"]["certified_noise_fix"] is False
    paper = section_config({**params, "scale": "paper"}, "cdfl")
    # the paper's batch and lr; Adam and K = 50 from the calibration (note 8: the paper names no optimizer)
    assert (paper["train"]["batch_size"], paper["train"]["lr"], paper["train"]["rounds"]) == (100, 0.001, 50)
    assert paper["train"]["optimizer"] == "adam" and paper["calibration"]["min_rounds"] == 50
    quick = section_config({**params, "scale": "quick"}, "cdfl")
    assert (quick["train"]["batch_size"], quick["train"]["lr"], quick["train"]["rounds"]) == (50, 0.1, 20)
    assert quick["train"]["optimizer"] == "sgd" and quick["calibration"] is None
    # the damping: at each scale the sweep's lowest retained loss on Table I IID-Ring (report; the spec's 1e-3
    # blows the diagonal-Fisher step up at both)
    assert (paper["unlearn"]["damping"], quick["unlearn"]["damping"]) == (10.0, 10.0)


BAD = [
    (lambda c: c["unlearn"].update(granularities=["sample", "user"]), "unlearn.granularities.1", "sample"),
    (lambda c: c["unlearn"].update({"class": 10}), "cdfl.unlearn.class", "0..9"),
    (lambda c: c["unlearn"].update({"class": -1}), "unlearn.class", ">= 0"),
    (lambda c: c["partition"].update(alpha=0), "partition.alpha", "> 0"),
    (lambda c: c["partition"].update(alpha=-0.3), "partition.alpha", "> 0"),
    (lambda c: c["unlearn"].update(damping=0), "unlearn.damping", "> 0"),
    (lambda c: c["unlearn"].update(damping=-1e-3), "unlearn.damping", "> 0"),
    (lambda c: c["unlearn"].update(epsilon=0), "unlearn.epsilon", "> 0"),
    (lambda c: c["unlearn"].update(epsilon=2.0), "unlearn.epsilon", "<= 1"),
    (lambda c: c["unlearn"].update(delta=0), "unlearn.delta", "> 0"),
    (lambda c: c["unlearn"].update(delta=1), "unlearn.delta", "< 1"),
    (lambda c: c["unlearn"].update(samples_per_request=301), "cdfl.unlearn.samples_per_request", "at most 50"),
    (lambda c: c["partition"].update(kinds=["iid"]) or c["unlearn"].update(samples_per_request=301),
     "cdfl.unlearn.samples_per_request", "at most 150"),
    (lambda c: c["unlearn"].update(sample_fraction=1.0), "unlearn.sample_fraction", "< 1"),
    (lambda c: c["unlearn"].update(curvature="hessian_exact"), "cdfl.unlearn.curvature", "fisher_diag"),
    (lambda c: c["unlearn"].update(client=10), "cdfl.unlearn.client", "0..9"),
    (lambda c: c["unlearn"].update(client_weights=["half"]), "unlearn.client_weights.0", "newton"),
    (lambda c: c["train"].update(optimizer="lbfgs"), "train.optimizer", "sgd"),
    (lambda c: c["quick"]["train"].update(batch_size=500), "cdfl.train.batch_size", "at most 50"),
    (lambda c: c["quick"]["partition"].update(min_size=400), "cdfl.partition.min_size", "at most 150"),
    (lambda c: c.update(models={"mnist": "logreg"}), "cdfl.models", "fashion_mnist"),
    (lambda c: c.update(typo=1), "typo", "unknown key"),
    (lambda c: c["quick"]["convex"].update(train_per_client=6001), "cdfl.convex.train_per_client", "at most 6000"),
    (lambda c: c["convex"].update(image_side=5), "convex.image_side", "28"),
    (lambda c: c["convex"].update(lambdas=[0.01, 0]), "convex.lambdas", "> 0"),
    (lambda c: c["calibration"].update(max_rounds=0), "calibration.max_rounds", "1"),
    (lambda c: c["calibration"].update(optimizers=[]), "calibration.optimizers", "non-empty"),
    (lambda c: c["synthetic_timing"].update(rounds=1), "synthetic_timing.rounds", "2"),
    (lambda c: c["synthetic_timing"].update(datasets=["svhn2"]), "synthetic_timing.datasets.0", "did you mean svhn"),
]


@pytest.mark.parametrize("edit, key, valid", BAD)
def test_bad_cdfl_value_is_one_line_naming_the_key(params, edit, key, valid):
    bad = copy.deepcopy(params)
    edit(bad["cdfl"])
    with pytest.raises(ParamsError) as err:
        check_params(bad)
    message = str(err.value)
    assert "\n" not in message and key in message and valid in message, message


def test_a_bad_quick_override_names_the_merged_key(params):
    bad = copy.deepcopy(params)
    bad["cdfl"]["quick"]["unlearn"] = {"damping": 0}
    with pytest.raises(ParamsError, match=r"cdfl\.quick merged: unlearn\.damping"):
        check_params(bad)
    bad["cdfl"]["quick"] = {"rounds": 5}
    with pytest.raises(ParamsError, match="cdfl.quick"):
        check_params(bad)


def test_check_params_exits_2_with_one_line(tmp_path, params, capsys):
    bad = copy.deepcopy(params)
    bad["cdfl"]["unlearn"]["delta"] = 1.5
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(bad))
    assert main(["check-params", "--params", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unlearn.delta" in err


def test_the_reports_setup_states_each_scales_training_from_the_params(params):
    """The report's setup bullet states both scales' training as params.yaml resolves them, whichever scale runs,
    and follows an edit (it once quoted a quick K of 40 after quick had moved to 20)."""
    from unlearning.config import scale_configs
    from unlearning.experiments.cdfl.report import choices

    edited = copy.deepcopy(params)
    edited["cdfl"]["quick"]["train"].update(rounds=17, lr=0.07)
    edited["cdfl"]["quick"]["partition"]["train_per_client"] = 123
    for scale in ("quick", "paper"):
        run = check_params({**edited, "scale": scale})
        text = choices(section_config(run, "cdfl"), [], scale_configs(run, "cdfl"))[0]
        assert "quick (cdfl.quick, its own settings) sgd at lr 0.07, batch 50, K = 17, at most 123 images" in text
        assert "paper adam at lr 0.001, batch 100, K = 50, the full shards, the full test set" in text
