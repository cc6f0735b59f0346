"""Bad parameters stop the run with one line naming the key and what would be valid, and no output."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import yaml

from conftest import ROOT
from unlearning.config import ParamsError, check_params, experiment_config, load_params


def set_key(params: dict, dotted: str, value) -> dict:
    node = params
    *parents, last = dotted.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return params


# (dotted key, bad value, text the one-line error must contain)
BAD = [
    ("colour", "red", "colour: unknown key"),
    ("spine.train.momentum", 0.9, "spine.train.momentum: unknown key"),
    ("spine.train.lr", "fast", "spine.train.lr: 'fast' is not of type 'number'"),
    ("spine.train.lr", -0.1, "valid: a number > 0"),
    ("privacy.delta", 1.5, "privacy.delta"),
    ("privacy.delta", 0, "valid: a number > 0 and < 1"),
    ("spine.forget.client", 10, "spine.forget.client: 10 is not a client index; valid: 0..9"),
    ("spine.forget.fraction", 1.5, "spine.forget.fraction"),
    ("spine.dataset", "imagenet", "spine.dataset: 'imagenet' is not valid; valid: cifar10"),
    ("spine.model", "vit", "spine.model: 'vit' is not valid; valid: logreg, mlp"),
    ("spine.topology.kind", "star", "spine.topology.kind: 'star' is not valid; valid: ring"),
    ("spine.methods", ["retrain", "magic"], "spine.methods.1: 'magic' is not valid; valid: retrain, finetune"),
    ("scale", "huge", "scale: 'huge' is not valid; valid: quick, paper"),
    ("spine.topology.p_edge", 2, "valid: a number > 0 and <= 1"),
    ("spine.clients", 1, "spine.clients"),
    ("spine.train.local_steps", 5, "set exactly one of them"),
    ("spine.forget.kind", "class", None),  # valid on its own; combined below
    ("spine.quick.colour", "red", "spine.quick.colour: unknown key; valid keys here: dataset"),
    ("spine.quick.train", {"lr": -1}, "spine.quick merged: train.lr"),
    ("spine.quick.partition", {"train_per_client": 7000}, "valid: at most 6000"),
    ("engine.strategy", "threads", "engine.strategy: 'threads' is not valid; valid: auto, vmap, loop"),
    ("device", "tpu", "device: 'tpu' is not valid; did you mean cpu? valid: auto, cpu, cuda"),
    ("pdudt.train.mixing", "gossip", "pdudt.train.mixing: 'gossip' is not valid; valid: model, gradient"),
    ("pdudt.default_sigma", 0.5, "pdudt.default_sigma: 0.5 is not in pdudt.sigmas"),
    ("pdudt.quick.pdudt_es", {"es_rounds": 100}, "pdudt.pdudt_es.es_rounds: 100 exceeds pdudt.train.rounds = 80"),
    ("pdudt.quick.datasets", ["fashion_mnist", "synthetic"], "pdudt.models: no model for dataset 'synthetic'"),
    ("spine.partition.kind", "class_to_target", None),
    ("pdudt.settings.candidates.iid", {"partition": {"kind": "stripes"}},
     "pdudt.settings.candidates.iid merged: partition.kind: 'stripes' is not valid; valid: iid"),
    ("pdudt.settings.candidates.cnn", {"train": {"mixing": "gradient"}}, None),  # PDUDT replays either mixing
    ("pdudt.settings.candidates.cnn", {"train": {"local_epochs": 2}},  # the quick default takes local_steps
     "pdudt.settings.candidates.cnn.train.local_epochs / local_steps: set exactly one of them"),
    ("pdudt.settings.candidates.cnn", {"colour": "red"},
     "pdudt.settings.candidates.cnn.colour: unknown key; valid keys here: datasets"),
    ("pdudt.settings.candidates", {"Bad_name": {}}, "'Bad_name' does not match"),
    ("pdudt.settings.datasets", ["synthetic"],
     "pdudt.settings.datasets: experiment 'pdudt-eq2_synthetic': 'synthetic' is not in pdudt.datasets"),
]


@pytest.mark.parametrize("key,value,expected", [b for b in BAD if b[2]], ids=[f"{b[0]}={b[1]}" for b in BAD if b[2]])
def test_bad_value_is_one_line_naming_the_key(params, key, value, expected):
    with pytest.raises(ParamsError) as err:
        check_params(set_key(params, key, value))
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith("params.yaml: ")
    assert expected in message


@pytest.mark.parametrize("section,key,typo", [("rrdu", "sensitivity", "sensitivty"), ("spine", "train", "trian")])
def test_a_misspelt_required_key_is_named_as_the_unknown_key(params, section, key, typo):
    """A required key spelt wrong is reported as the unknown key written, with the one meant, not as the required
    one missing; a required key simply left out is still reported as missing."""
    params[section][typo] = params[section].pop(key)
    with pytest.raises(ParamsError, match=rf"^params\.yaml: {section}\.{typo}: unknown key; did you mean {key}\? "
                                          r"valid keys here: "):
        check_params(params)
    del params[section][typo]
    with pytest.raises(ParamsError, match=rf"^params\.yaml: {section}: '{key}' is a required property$"):
        check_params(params)


def test_forget_class_beyond_classes(params):
    set_key(params, "spine.forget.kind", "class")
    set_key(params, "spine.forget.class", 10)
    with pytest.raises(ParamsError, match=r"spine.forget.class: 10 is not a class of fashion_mnist; valid: 0..9"):
        check_params(params)


def test_cnn_needs_28x28_images(params):
    set_key(params, "spine.dataset", "cifar10")
    set_key(params, "spine.model", "cnn")
    with pytest.raises(ParamsError, match=r"spine.model: 'cnn' takes 28x28 images but cifar10 has 32x32"):
        check_params(params)


def test_class_to_target_needs_a_client_request(params):
    set_key(params, "spine.partition.kind", "class_to_target")
    set_key(params, "spine.forget.kind", "fraction")
    with pytest.raises(ParamsError, match="class_to_target gives spine.forget.client all of class"):
        check_params(params)


def test_per_dataset_experiments(params):
    from unlearning.config import experiments

    assert experiments(params, "spine") == ["spine"]
    assert experiments(params, "pdudt")[0] == "pdudt_fashion_mnist"
    cfg = experiment_config(params, "pdudt_cifar10")
    assert cfg["dataset"] == "cifar10" and cfg["model"] == params["pdudt"]["quick"]["models"]["cifar10"]
    with pytest.raises(KeyError, match="valid: spine, pdudt_<dataset> or pdudt-<setting>_<dataset>"):
        experiment_config(params, "r2d_mnist")


def test_setting_experiments_merge_their_override_last(params):
    """pdudt-<setting>_<dataset>: the section at its scale, then the candidate's override (issue 15)."""
    from unlearning.config import setting_experiments

    params["pdudt"]["quick"].pop("settings", None)  # the shipped candidates' quick overrides
    params["pdudt"]["settings"] = {"datasets": ["fashion_mnist"],
                                   "candidates": {"iid": {"partition": {"kind": "iid"}}, "cnn": {"models": {
                                       "fashion_mnist": "cnn"}, "methods": ["retrain", "pdudt"]}}}
    check_params(params)
    assert setting_experiments(params, "pdudt") == ["pdudt-iid_fashion_mnist", "pdudt-cnn_fashion_mnist"]
    default = experiment_config(params, "pdudt_fashion_mnist")
    iid = experiment_config(params, "pdudt-iid_fashion_mnist")
    cnn = experiment_config(params, "pdudt-cnn_fashion_mnist")
    assert default["setting"] == "default" and iid["setting"] == "iid"
    assert iid["partition"] == {**default["partition"], "kind": "iid"} and iid["model"] == default["model"]
    assert cnn["model"] == "cnn" and cnn["methods"] == ["retrain", "pdudt"]
    assert cnn["train"] == default["train"]  # the quick scale's values survive the override
    with pytest.raises(KeyError, match="'pretrained' is not in pdudt.settings.candidates; valid: iid, cnn"):
        experiment_config(params, "pdudt-pretrained_fashion_mnist")


def test_scale_block_overrides_a_candidate(params):
    """A scale block's settings.candidates.<name> merges into that candidate: at quick the shipped `onestep` takes the
    default's budget (one gradient a round) with gradient mixing, so the two differ in the mixing only, while `eq2`
    keeps a local epoch a round; at the paper scale `eq2` is the default with gradient mixing."""
    default, eq2, onestep = (experiment_config(params, f"pdudt{s}_fashion_mnist") for s in ("", "-eq2", "-onestep"))
    assert default["train"]["mixing"] == "model" and onestep["train"]["mixing"] == eq2["train"]["mixing"] == "gradient"
    assert {**default["train"], "mixing": "gradient"} == onestep["train"]
    assert default["train"]["local_steps"] == 1 and eq2["train"]["local_epochs"] == 1
    assert eq2["train"]["local_steps"] is None
    assert onestep["methods"] == ["retrain"]
    params["scale"] = "paper"
    paper = experiment_config(params, "pdudt-eq2_fashion_mnist")
    assert paper["train"] == {**experiment_config(params, "pdudt_fashion_mnist")["train"], "mixing": "gradient"}


def test_missing_key_is_named(params):
    del params["spine"]["train"]
    with pytest.raises(ParamsError, match="'train' is a required property"):
        check_params(params)


def test_missing_file_and_bad_yaml(tmp_path):
    with pytest.raises(ParamsError, match="nope.yaml: file not found"):
        load_params(tmp_path / "nope.yaml")
    (tmp_path / "bad.yaml").write_text("scale: [quick\n")
    with pytest.raises(ParamsError, match="bad.yaml: not valid YAML"):
        load_params(tmp_path / "bad.yaml")


def test_shipped_params_are_valid_at_both_scales(params):
    check_params(params)
    params["scale"] = "paper"
    check_params(params)
    assert experiment_config(params, "spine")["model"] == "cnn"


def test_scale_override_is_merged(params):
    params["spine"]["quick"] = {"train": {"rounds": 3}}
    cfg = experiment_config(params, "spine")
    assert cfg["train"]["rounds"] == 3 and cfg["train"]["lr"] == params["spine"]["train"]["lr"]
    assert "quick" not in cfg and "paper" not in cfg


def _bad_params_file(tmp_path, params) -> None:
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(set_key(params, "spine.train.lr", -0.1)))


@pytest.mark.slow  # starts the command line's process per bad value (4 s): the full suite's, not the edit loop's
def test_cli_exits_non_zero_with_one_line(tmp_path, params):
    _bad_params_file(tmp_path, params)
    run = subprocess.run([sys.executable, "-m", "unlearning", "split", "--exp", "spine", "--features", "x",
                          "--out", str(tmp_path / "split.safetensors"), "--params", str(tmp_path / "params.yaml")],
                         capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stderr.strip().count("\n") == 0
    assert "spine.train.lr: -0.1" in run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]


@pytest.mark.slow  # starts every report step's process (4 s): the full suite's, not the edit loop's
def test_report_steps_never_import_torch(tmp_path):
    """A step that only reads results into a report skips torch's 2-3 s import (issue 40: the workflow runs dozens
    of them, the tests many): a job reading the resolved file a plan wrote (and checked with every plugin) re-checks
    what needs no plugin, and imports no plugin module, so torch stays unloaded; a step given any other file checks
    the plugins too (importing them). Compute steps load torch and set its threads."""
    from unlearning.config import check_params, load_params
    from unlearning.resolved import write_resolved

    resolved = write_resolved(check_params(load_params(ROOT / "params.yaml")), tmp_path / ".snakemake" / "resolved")
    code = ("import sys; from unlearning.__main__ import load_checked, planned; path = sys.argv[1]; "
            "load_checked(path, plugins=not planned(path)); print('torch' in sys.modules)")
    for path, torch_loaded in ((resolved, "False"), (ROOT / "params.yaml", "True")):
        run = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=ROOT)
        assert run.returncode == 0 and run.stdout.split()[-1] == torch_loaded, run.stderr[-500:]
    from unlearning.__main__ import reads_results_only

    assert reads_results_only("common-report") and reads_results_only("index")
    assert not reads_results_only("common-method") and not reads_results_only("prepare")


@pytest.mark.slow  # plans the workflow (a Snakemake dry run, 5 s): the full suite's, not the edit loop's
def test_snakemake_stops_before_any_job(tmp_path, params):
    _bad_params_file(tmp_path, params)
    snakemake = os.path.join(os.path.dirname(sys.executable), "snakemake")
    run = subprocess.run([snakemake, "--cores", "1", "-d", str(tmp_path), "-s", str(ROOT / "Snakefile")],
                         capture_output=True, text=True)
    assert run.returncode != 0
    assert "error: params.yaml: spine.train.lr: -0.1 is less than or equal to the minimum of 0" in run.stderr
    assert sorted(p.name for p in tmp_path.iterdir() if p.name != ".snakemake") == ["params.yaml"]


def test_a_centralized_method_is_checked_against_the_runners_and_its_block_must_exist(tmp_path):
    """common.centralized.methods and common.mlp.methods are the registered runners (methods/, register_central); a
    runner's own block (params_key) takes its declared defaults where missing and holds its declared keys only."""
    from unlearning.config import ParamsError, check_params

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["common"]["mlp"]["methods"] = ["r2d", "sglu"]
    with pytest.raises(ParamsError, match=r"common\.mlp\.methods\.1: 'sglu' is not valid; did you mean salun\? "
                                          r"valid: cns, hf, "):
        check_params(params)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    del params["common"]["centralized"]["salun"]  # a missing block is its declared defaults
    assert check_params(params)["common"]["centralized"]["salun"] == {"steps": 50, "lr": 1.0, "ratio": 0.5}
    params["common"]["centralized"]["salun"] = {"steps": 50, "lr": 1.0, "ration": 0.5}
    with pytest.raises(ParamsError, match=r"common\.centralized\.salun\.ration: unknown key; did you mean ratio\?"):
        check_params(params)
