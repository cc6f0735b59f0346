"""Bad input is refused with one line naming the option, key or file and what is valid (exit 2), never
silently used: the certify commands, check-params, a diverging run, and corrupt or truncated files."""

from __future__ import annotations

import copy
import logging
import math
import os
import re
import struct
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from unlearning.__main__ import main
from unlearning.config import ParamsError, check_params, load_params
from unlearning.data.datasets import DatasetUnavailable, load_torchvision
from unlearning.files import CorruptFile, load_metadata, load_tensors, read_json, save_tensors, write_json
from unlearning.history import CheckpointStore, History, HistoryWriter
from unlearning.models import build_model
from unlearning.privacy import sglu
from unlearning.privacy import sglu_baselines as bl
from unlearning.train.dsgd import ClientData, Diverged, Schedule, all_finite, check_finite, train
from unlearning.train.flat import FlatSpec

ROOT = Path(__file__).resolve().parents[1]


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def _one_line_error(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ")
    return lines[0]


# ------------------------------------------------------------------------------------------- sglu-certify

SGLU = ["sglu-certify", "--n", "11264", "--b", "128"]


@pytest.mark.parametrize("extra, names", [
    (["--epsilon", "0.00001", "--K", "1"], ["epsilon = 1e-05", "valid: epsilon > 9.3"]),  # below the floor
    (["--epsilon", "0", "--K", "1"], ["epsilon = 0", "valid: a finite number > 0"]),
    (["--epsilon", "nan", "--K", "1"], ["epsilon = nan"]),
    (["--epsilon", "inf", "--K", "1"], ["epsilon = inf"]),
    (["--epsilon", "-1", "--K", "1"], ["epsilon = -1"]),
    (["--epsilon", "1", "--sigma", "-0.1"], ["sigma = -0.1", "> 0"]),
    (["--epsilon", "1", "--sigma", "0"], ["sigma = 0"]),
    (["--epsilon", "1", "--sigma", "nan"], ["sigma = nan"]),
    (["--epsilon", "1", "--K", "1", "--delta", "2"], ["delta = 2", "> 0 and < 1"]),
    (["--epsilon", "1", "--K", "1", "--delta", "0"], ["delta = 0"]),
    (["--epsilon", "1", "--K", "1", "--M", "-1"], ["M = -1"]),
    (["--epsilon", "1", "--K", "1", "--M", "nan"], ["M = nan"]),
    (["--epsilon", "1", "--K", "1", "--R", "0"], ["R = 0"]),
    (["--epsilon", "1", "--K", "1", "--L", "nan", "--m", "0.1"], ["L = nan"]),
    (["--epsilon", "1", "--K", "1", "--L", "1", "--m", "-0.5"], ["m = -0.5"]),
    (["--epsilon", "1", "--K", "1", "--L", "1", "--m", "inf"], ["m = inf"]),
    (["--epsilon", "1", "--K", "1", "--lam-per-n", "0"], ["lam_per_n = 0"]),
    (["--epsilon", "1", "--K", "0"], ["K = 0", "an integer >= 1"]),
    (["--epsilon", "1", "--K", "1", "--burn-in", "-1"], ["burn-in T = -1", ">= 0"]),
    (["--epsilon", "0.001", "--sigma", "0.01", "--burn-in", "1"], ["no K", "burn-in"]),
])
def test_sglu_certify_refuses_with_one_line(capsys, extra, names):
    code, out, err = _run(SGLU + extra, capsys)
    assert code == 2 and out == ""
    line = _one_line_error(err)
    for name in names:
        assert name in line, line


@pytest.mark.parametrize("n, b, valid", [(12000, "64", 11968), (100, "3", 99), (0, "full", None)])
def test_sglu_certify_refuses_n_not_a_multiple_of_b(capsys, n, b, valid):
    """Training drops the last n mod b points; the certificate would be for another n, so it is refused."""
    code, out, err = _run(["sglu-certify", "--n", str(n), "--b", b, "--epsilon", "1", "--K", "1"], capsys)
    line = _one_line_error(err)
    assert code == 2 and out == ""
    assert (f"valid: n = {valid}" in line) if valid else "n = 0" in line


def _printed(out: str) -> tuple[float, float]:
    sigma = float(re.search(r"sigma = (\S+)", out).group(1))
    return sigma, float(re.search(r"epsilon achieved = (\S+)", out).group(1))


@pytest.mark.parametrize("extra, target, widened", [
    (["--epsilon", "1", "--K", "1", "--burn-in", "0"], 1.0, True),  # was sigma = 10, epsilon achieved 322.98
    (["--epsilon", "0.0002", "--K", "1"], 0.0002, True),  # Corollary 3.8: needs sigma > 10, Algorithm 4's edge
    (["--epsilon", "0.001", "--K", "1", "--burn-in", "20"], 0.001, False),
])
def test_sglu_certify_widens_the_bracket_until_the_target_holds(capsys, extra, target, widened):
    code, out, _ = _run(SGLU + extra, capsys)
    assert code == 0
    sigma, achieved = _printed(out)
    assert (sigma > 10) == widened and achieved <= target


def test_privacy_functions_validate_without_the_cli():
    """The checks live in the privacy package, so any caller (not only __main__) gets them."""
    k = sglu.logistic_constants(11264, 128)
    with pytest.raises(ValueError, match="K = 0"):
        sglu.certify_sigma(k, 1.0, 1 / k.n, K=0)
    with pytest.raises(ValueError, match="sigma = -1"):
        sglu.certificate_epsilon(k, -1.0, 1, 1 / k.n)
    with pytest.raises(ValueError, match="n = 12000 is not a multiple of b = 64"):
        sglu.certify_k(sglu.logistic_constants(12000, 64), 0.1, 1.0, 1e-4)
    with pytest.raises(ValueError, match="no K <= 5 reaches"):
        sglu.least_k(lambda K: False, k_max=5)
    with pytest.raises(ValueError, match="delta = 2"):
        bl.BaselineConstants(n=100, L=1.0, m=0.1, d=3, delta=2.0)
    with pytest.raises(ValueError, match="valid: epsilon >"):
        bl.lu_sigma_for_budget(bl.sglu_baseline_constants("mnist"), 1e-6)
    with pytest.raises(ValueError, match="epsilon = 0"):
        bl.d2d_sigma_internal(bl.sglu_baseline_constants("mnist"), 0.0, 1)
    with pytest.raises(ValueError, match="steps = 0"):
        bl.d2d_sigma_internal(bl.sglu_baseline_constants("mnist"), 1.0, 0)


# ------------------------------------------------------------------------------------------- PDUDT certify

PDUDT = ["certify", "--d1", "0.05", "--beta", "1e-5"]
THM49 = ["certify", "--eta", "1e-4", "--L", "1", "--n", "10", "--t1", "10", "--rho1", "0.5", "--rho2", "0.5",
         "--sigma1-sq", "1", "--sigma2-sq", "1", "--df-n", "1", "--df-n1", "1", "--epsilon", "1", "--beta", "1e-5"]


def _replace(argv: list[str], option: str, value: str) -> list[str]:
    out = list(argv)
    out[out.index(option) + 1] = value
    return out


@pytest.mark.parametrize("argv, name", [
    (PDUDT + ["--epsilon", "0"], "epsilon = 0"),
    (PDUDT + ["--epsilon", "nan"], "epsilon = nan"),
    (PDUDT + ["--epsilon", "inf"], "epsilon = inf"),
    (PDUDT + ["--epsilon", "-2"], "epsilon = -2"),
    (PDUDT + ["--sigma", "0"], "sigma = 0"),
    (PDUDT + ["--sigma", "-0.1"], "sigma = -0.1"),
    (PDUDT + ["--sigma", "nan"], "sigma = nan"),
    (_replace(PDUDT, "--beta", "1") + ["--epsilon", "1"], "beta = 1"),
    (_replace(PDUDT, "--beta", "0") + ["--epsilon", "1"], "beta = 0"),
    (_replace(PDUDT, "--beta", "2") + ["--sigma", "1"], "beta = 2"),
    (_replace(PDUDT, "--d1", "nan") + ["--epsilon", "1"], "sensitivity (d1) = nan"),
    (_replace(PDUDT, "--d1", "-1") + ["--epsilon", "1"], "sensitivity (d1) = -1"),
    (_replace(THM49, "--L", "-1"), "L = -1"),
    (_replace(THM49, "--L", "inf"), "L = inf"),
    (_replace(THM49, "--n", "1"), "n = 1"),
    (_replace(THM49, "--t1", "0"), "t1 = 0"),
    (_replace(THM49, "--df-n", "-1"), "df_n = -1"),
    (_replace(THM49, "--rho1", "nan"), "rho1 = nan"),
])
def test_pdudt_certify_refuses_with_one_line(capsys, argv, name):
    code, out, err = _run(argv, capsys)
    assert code == 2 and out == ""
    assert name in _one_line_error(err)


def test_pdudt_certify_sigma_reaches_its_epsilon(capsys):
    from unlearning.privacy.gaussian import epsilon

    code, out, _ = _run(PDUDT + ["--epsilon", "0.1"], capsys)
    assert code == 0
    sigma = float(re.search(r"sigma = (\S+)", out).group(1))  # printed to 6 digits: round up to compare
    assert epsilon(0.05, sigma * (1 + 1e-5), 1e-5) <= 0.1


# ------------------------------------------------------------------------------------------- check-params


def _write(tmp_path: Path, params: dict) -> Path:
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


def _check_cli(tmp_path: Path, capsys, text: str) -> tuple[int, str, str]:
    path = tmp_path / "params.yaml"
    path.write_text(text)
    return _run(["check-params", "--params", str(path)], capsys)


@pytest.mark.parametrize("edit, key, valid", [
    (lambda p: p["spine"]["train"].update(lr=math.nan), "spine.train.lr", "nan is not finite"),
    (lambda p: p["spine"]["train"].update(lr=math.inf), "spine.train.lr", "inf is not finite"),
    (lambda p: p["privacy"].update(delta=math.nan), "privacy.delta", "valid: a number > 0 and < 1"),
    (lambda p: p["pdudt"].update(sigmas=[0.001, math.inf]), "pdudt.sigmas.1", "inf is not finite"),
    (lambda p: p["sglu"]["fig3b"].update(sigma=-math.inf), "sglu.fig3b.sigma", "not finite"),
    (lambda p: p["spine"]["quick"]["train"].update(batch_size=700), "spine.train.batch_size",
     "exceeds the 600 training samples of a client"),
    (lambda p: p["pdudt"]["quick"]["train"].update(batch_size=501), "pdudt.train.batch_size", "valid: at most"),
    (lambda p: p["spine"]["forget"].update(kind="fraction", fraction=1.0), "spine.forget.fraction", "< 1"),
    (lambda p: p.update(seed=1e23), "seed", "is a float"),
    (lambda p: p.update(seed=10**23), "seed", "<= 9223372036854775807"),
    (lambda p: p.update(seed=5.0), "seed", "is a float"),
    (lambda p: p.update(seed=-1), "seed", "valid: an integer >= 0"),
    (lambda p: p["spine"]["quick"]["train"].update(rounds=20.0), "train.rounds: 20.0", "is a float"),
    (lambda p: p["spine"]["partition"].update(train_per_client=math.nan), "spine.partition.train_per_client",
     "not finite"),
])
def test_check_params_refuses_with_one_line(tmp_path, capsys, params, edit, key, valid):
    bad = copy.deepcopy(params)
    edit(bad)
    code, out, err = _run(["check-params", "--params", str(_write(tmp_path, bad))], capsys)
    line = _one_line_error(err)
    assert code == 2 and out == ""
    assert key in line and valid in line, line


@pytest.mark.parametrize("text, line_no, key", [
    ("seed: 0\nscale: quick\nseed: 3\n", 3, "seed"),
    ("privacy:\n  delta: 1.0e-5\n  delta: 0.1\n", 3, "delta"),
])
def test_duplicate_yaml_keys_are_refused(tmp_path, capsys, text, line_no, key):
    code, _, err = _check_cli(tmp_path, capsys, text)
    line = _one_line_error(err)
    assert code == 2 and f"line {line_no}: key '{key}' appears twice" in line


def test_duplicate_key_in_the_shipped_params_is_refused(tmp_path):
    text = (ROOT / "params.yaml").read_text().replace("    lr: 0.05\n", "    lr: 0.05\n    lr: 0.5\n", 1)
    path = tmp_path / "params.yaml"
    path.write_text(text)
    with pytest.raises(ParamsError, match="key 'lr' appears twice"):
        load_params(path)


def test_a_run_of_days_warns_with_an_estimate_and_continues(params, caplog):
    big = copy.deepcopy(params)
    big["spine"]["quick"]["train"]["rounds"] = 10**8
    with caplog.at_level(logging.WARNING, logger="unlearning.config"):
        check_params(big)
    [record] = [r for r in caplog.records if "spine.train.rounds" in r.getMessage()]
    assert "days" in record.getMessage() and "\n" not in record.getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="unlearning.config"):
        check_params(params)  # the shipped sizes: no warning
    assert not caplog.records


def test_workflow_schema_is_a_relative_link_to_the_package_schema():
    """One source: workflow/schemas/params.schema.yaml (Snakemake's validate) is the package's file."""
    link = ROOT / "workflow" / "schemas" / "params.schema.yaml"
    assert link.is_symlink() and not os.path.isabs(os.readlink(link))
    assert link.resolve() == (ROOT / "src" / "unlearning" / "schemas" / "params.schema.yaml").resolve()


# ------------------------------------------------------------------------------------------- divergence


def test_a_diverging_run_stops_at_the_first_non_finite_round_and_step():
    gen = torch.Generator().manual_seed(0)
    x, y = 100 * torch.randn(60, 1, 28, 28, generator=gen), torch.randint(0, 10, (60,), generator=gen)
    data = ClientData(x, y, [torch.arange(0, 30), torch.arange(30, 60)], [torch.ones(30, dtype=torch.bool)] * 2)
    model = build_model("mlp", (1, 28, 28), 10, mlp_hidden=8)
    spec = FlatSpec.of(model)
    theta = spec.flatten(model).repeat(2, 1)
    sched = Schedule("model", 1e30, 10, 1, None, "complete", 1.0, 0, 2, experiment="spine")
    where = r"spine: diverged in round \d+ \(counting from 0\), .*local step \d+: .*loss is nan"
    with pytest.raises(Diverged, match=where):
        train(model, spec, theta, data, [0, 1], sched, range(5), "loop")
    ok = Schedule("model", 0.01, 10, 1, None, "complete", 1.0, 0, 2, experiment="spine")
    done, _ = train(model, spec, theta, data, [0, 1], ok, range(2), "loop")  # a sane lr trains through
    assert bool(torch.isfinite(done).all())


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_methods_weight_check_names_where(bad):
    """FATS, HDUS and PDUDT's correction call check_finite once per round / update with their own label."""
    theta = torch.zeros(3, 4)
    check_finite(theta, "pdudt_synthetic: FATS's FedAvg, round 2")  # finite: passes
    theta[1, 2] = bad
    with pytest.raises(Diverged, match="pdudt_synthetic: FATS's FedAvg, round 2: weights are not finite"):
        check_finite(theta, "pdudt_synthetic: FATS's FedAvg, round 2")


@pytest.mark.parametrize("where", [0, 7, 19])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_all_finite_finds_one_bad_entry_anywhere(where, bad):
    """One NaN or infinity among entries whose sum overflows float32 (finite each) and a -0.0."""
    t = torch.full((4, 5), 3e38)
    t[0, 1] = -0.0
    assert all_finite(t) and all_finite(torch.empty(0, 5))
    t.view(-1)[where] = bad
    assert not all_finite(t)


# ------------------------------------------------------------------------------------------- corrupt files


def _truncate(path: Path, keep: float = 0.5) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: int(len(data) * keep)])


@pytest.mark.parametrize("keep", [0.0, 0.01, 0.5, 0.99])
def test_truncated_safetensors_are_refused_with_the_file_name(tmp_path, keep):
    path = tmp_path / "processed.safetensors"
    save_tensors(path, {"x": torch.arange(1000.0)}, {"n": 1000})
    _truncate(path, keep)
    with pytest.raises(CorruptFile, match=r"processed\.safetensors: corrupt or truncated .*delete it and re-run"):
        load_tensors(path)
    with pytest.raises(CorruptFile, match="processed.safetensors"):
        load_metadata(path)


def test_truncated_json_is_refused(tmp_path):
    path = tmp_path / "meta.json"
    write_json(path, {"rounds": [0, 1, 2], "clients": [0, 1]})
    _truncate(path)
    with pytest.raises(CorruptFile, match="meta.json: corrupt or truncated"):
        read_json(path)


def _history(tmp_path: Path) -> Path:
    writer = HistoryWriter(tmp_path / "history", rounds=3, clients=[0, 1], dim=50, dtype="float32")
    for t in range(3):
        writer.append(t, torch.full((2, 50), float(t)), {"W": torch.eye(2)})
    writer.close()
    return tmp_path / "history"


def test_truncated_history_gradients_are_refused(tmp_path):
    directory = _history(tmp_path)
    assert History(directory).grads(2)[0, 0] == 2.0  # intact, it reads
    _truncate(directory / "grads.npy", 0.7)
    with pytest.raises(CorruptFile, match="grads.npy: corrupt or truncated"):
        History(directory)


def test_history_gradients_of_the_wrong_shape_are_refused(tmp_path):
    directory = _history(tmp_path)
    np.save(directory / "grads.npy", np.zeros((2, 2, 50), dtype=np.float32))  # a round short
    with pytest.raises(CorruptFile, match=r"meta.json says float32 \[3, 2, d\]"):
        History(directory)


def test_truncated_history_mixing_is_refused(tmp_path):
    directory = _history(tmp_path)
    _truncate(directory / "mixing.safetensors", 0.6)
    with pytest.raises(CorruptFile, match="mixing.safetensors"):
        History(directory)


def test_truncated_checkpoint_is_refused(tmp_path):
    store = CheckpointStore(tmp_path / "ckpt")
    store.save(5, torch.ones(3, 20), [0, 1, 2])
    _truncate(store.path(5), 0.8)
    with pytest.raises(CorruptFile, match="round_00005.safetensors: corrupt or truncated"):
        store.load(5)


def test_checkpoint_with_mismatched_clients_is_refused(tmp_path):
    store = CheckpointStore(tmp_path / "ckpt")
    save_tensors(store.path(5), {"theta": torch.ones(3, 20), "clients": torch.tensor([0, 1])})
    with pytest.raises(CorruptFile, match="not theta"):
        store.load(5)


def _write_idx(raw: Path, n: int, label_count: int | None = None, magic: int = 0x00000803) -> None:
    raw.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for prefix in ("train", "t10k"):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        (raw / f"{prefix}-images-idx3-ubyte").write_bytes(struct.pack(">IIII", magic, n, 28, 28) + images.tobytes())
        labels = rng.integers(0, 10, size=label_count or n, dtype=np.uint8)
        (raw / f"{prefix}-labels-idx1-ubyte").write_bytes(struct.pack(">II", 0x00000801, len(labels))
                                                          + labels.tobytes())


@pytest.mark.parametrize("damage, why", [
    (lambda raw: _truncate(raw / "train-images-idx3-ubyte", 0.6), "corrupt or truncated"),
    (lambda raw: _truncate(raw / "train-labels-idx1-ubyte", 0.9), "corrupt or truncated"),
    (lambda raw: _truncate(raw / "t10k-images-idx3-ubyte", 0.3), "raw test files"),
    (lambda raw: _write_idx(raw, 5, label_count=4), "5 images, 4 labels"),
    (lambda raw: _write_idx(raw, 5, magic=0x00000F03), "corrupt or truncated"),
])
def test_damaged_raw_idx_files_are_refused(tmp_path, damage, why):
    raw = tmp_path / "FashionMNIST" / "raw"
    _write_idx(raw, 5)
    assert len(load_torchvision("fashion_mnist", tmp_path, download=False)["y_train"]) == 5  # intact, it loads
    damage(raw)
    with pytest.raises(DatasetUnavailable, match=why):
        load_torchvision("fashion_mnist", tmp_path, download=False)


def test_cli_refuses_a_truncated_processed_file_with_exit_2(tmp_path, capsys):
    processed = tmp_path / "processed.safetensors"
    save_tensors(processed, {"x_train": torch.zeros(10, 1, 28, 28, dtype=torch.uint8)}, {"dataset": "synthetic"})
    _truncate(processed, 0.5)
    code, _, err = _run(["features", "--params", str(ROOT / "params.yaml"), "--processed", str(processed),
                         "--out", str(tmp_path / "features.safetensors")], capsys)
    assert code == 2 and "processed.safetensors: corrupt or truncated" in _one_line_error(err)
    assert not (tmp_path / "features.safetensors").exists()


def test_a_missing_file_error_prints_its_path_not_its_errno(monkeypatch, capsys):
    """An OSError's args are (errno, text); the one-line error names the file, never just "error: 2"."""
    from unlearning import __main__ as entry
    from unlearning.experiments.pdudt import cli

    def missing(params, args):
        raise FileNotFoundError(2, "No such file or directory", "artifacts/x/models.safetensors")

    monkeypatch.setattr(cli, "run", missing)
    assert entry.main(["pdudt-report", "--out-dir", "unused"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: [Errno 2] No such file or directory: 'artifacts/x/models.safetensors'"


def test_snakemakes_validation_with_the_schema_file_accepts_the_shipped_params():
    """Snakemake validates with the schema file as it is (workflow/rules/common.smk), before check_params closes the
    common ground's method blocks to the registered names: the file itself must accept params.yaml and the tiny
    config, a registered method's params block included."""
    import jsonschema
    import yaml

    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "params.schema.yaml").read_text())
    for path in (ROOT / "params.yaml", ROOT / "tests" / "config" / "tiny.yaml"):
        jsonschema.Draft202012Validator(schema).validate(yaml.safe_load(path.read_text()))
