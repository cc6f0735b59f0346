"""CDFL's wall time on synthetic inputs (cdfl-timing, experiments/cdfl/timing.py) on the tiny setup: the synthetic
features file, the arithmetic of RT's estimate and DU's sum, the sizes it ran at, the report's section and bad
input."""

import copy
import json

import pytest
import torch

from unlearning.data.sources import DATASETS
from unlearning.experiments.cdfl import report, timing
from unlearning.files import load_metadata, load_tensors


@pytest.fixture(scope="module")
def timed(tiny, tmp_path_factory):
    params = copy.deepcopy(tiny[0])
    out = tmp_path_factory.mktemp("cdfl_timing") / "timing_synthetic.json"
    timing.step_timing(params, "synthetic", 3, str(out))
    return params, json.loads(out.read_text())


def test_synthetic_features_have_the_dataset_shape_and_size(tmp_path):
    classes, shape, n_train = DATASETS["synthetic"].info
    for name in ("a", "b"):
        timing.synthetic_features("synthetic", 7, tmp_path / f"{name}.safetensors")
    a, b = (load_tensors(tmp_path / f"{n}.safetensors") for n in ("a", "b"))
    assert a["x_train"].shape == (n_train, *shape) and a["x_test"].shape == (timing.TEST_IMAGES, *shape)
    assert int(a["y_train"].min()) >= 0 and int(a["y_train"].max()) == classes - 1
    assert all(torch.equal(a[k], b[k]) for k in a)  # seeded
    meta = load_metadata(tmp_path / "a.safetensors")
    assert meta["shape"] == list(shape) and meta["synthetic"] is True


def test_rt_is_k_times_the_mean_round_after_the_first(timed):
    params, result = timed
    cfg = params["cdfl"]
    assert len(result["round_s"]) == 3 and result["rounds"] == cfg["train"]["rounds"]
    assert result["round_s_mean"] == pytest.approx(sum(result["round_s"][1:]) / 2)
    assert result["rt_s"] == pytest.approx(result["rounds"] * result["round_s_mean"])
    assert result["synthetic"] is True and result["device"]["type"] == params["device"]  # the run's device
    assert result["client_sizes"] == [cfg["partition"]["train_per_client"]] * cfg["clients"]


def test_du_is_correction_plus_finetuning_per_granularity(timed):
    params, result = timed
    cfg = params["cdfl"]
    per_client = cfg["partition"]["train_per_client"]
    assert set(result["granularities"]) == {"sample", "class", "client"}
    for t in result["granularities"].values():
        assert t["du_correction_s"] > 0 and t["du_finetune_s"] > 0
        assert t["du_s"] == pytest.approx(t["du_correction_s"] + t["du_finetune_s"])
        assert t["du_over_rt"] == pytest.approx(t["du_s"] / result["rt_s"])
        assert t["du_round_equivalents"] == pytest.approx(t["du_s"] / result["round_s_mean"])
    sample = result["granularities"]["sample"]["forget_samples"]
    assert sample == cfg["clients"] * int(cfg["unlearn"]["sample_fraction"] * per_client)
    assert result["granularities"]["client"]["forget_samples"] == per_client


def test_report_section(timed):
    _, result = timed
    table = report.synthetic_timing_table([result])
    assert list(table["granularity"]) == ["sample", "class", "client"]
    k = result["rounds"]
    assert set(table["status"]) == {f"not gated (K = {k} < 50)"}  # the tiny K; the 10 % gate needs K >= 50
    gated = report.synthetic_timing_table([{**result, "rounds": 50}])
    assert all(s.startswith(("within", "outside")) for s in gated["status"])


def test_bad_input(tiny, tmp_path):
    with pytest.raises(ValueError, match="--rounds = 1"):
        timing.step_timing(tiny[0], "synthetic", 1, str(tmp_path / "x.json"))
    with pytest.raises(ValueError, match="--dataset 'svhn'"):
        timing.step_timing(tiny[0], "svhn", 3, str(tmp_path / "x.json"))
    assert not (tmp_path / "x.json").exists()


def _cell(seed: int, device: str, du_s: float, stable_s: float, partition: str = "iid", rounds: int = 50):
    """One cell's result and timing as the report reads them: sample-wise DU only, RT until stable timed."""
    name = f"fashion_mnist_{partition}_ring_s{seed}_{device}"
    result = {"experiment": name, "dataset": "fashion_mnist", "partition": partition, "topology": "ring",
              "seed": seed, "rounds": rounds, "granularities": {"sample": {"du": {"messages": 1, "floats": 1}}}}
    timing = {"experiment": name, "device": device,
              "sample": {"du_correction_s": du_s / 2, "du_s": du_s, "rt_s": 2 * stable_s, "rt_stable_s": stable_s,
                         "rt_stable_round": 10}}
    return result, timing


def _statuses(cells) -> list[str]:
    results, timings = zip(*cells)
    return list(report.timing_table(list(results), list(timings)).status)


def test_the_ten_percent_line_is_decided_beyond_one_seeds_spread():
    """DU's time over RT's until stable, one timing a seed: a seed is judged against the 10 % line only where it lies
    farther from it than one seed's spread of the ratio in its cell (the std over the cell's seeds on its device)."""
    spread = _statuses([_cell(1, "cuda", 9.1, 100.0), _cell(2, "cuda", 20.6, 100.0)])  # 0.091, 0.206: std 0.081
    assert spread[0].startswith("uninformative: 0.091 lies within 0.0813 (one seed's spread over its 2 seeds on "
                                "cuda) of the 10 % line")
    assert spread[1] == "outside"  # 0.106 past the line, beyond 0.081
    assert _statuses([_cell(1, "cuda", 4.0, 100.0), _cell(2, "cuda", 5.0, 100.0)]) == ["within", "within"]


def test_a_device_with_one_seed_borrows_the_relative_spread_or_says_it_rests_on_one_seed():
    cuda = [_cell(1, "cuda", 4.0, 100.0), _cell(2, "cuda", 5.0, 100.0)]  # mean 0.045, std 0.00707: 16 %
    borrowed = _statuses([_cell(0, "cpu", 9.5, 100.0), *cuda])[0]  # 0.095 +- 16 %: 0.015 reaches the line
    assert borrowed.startswith("uninformative: 0.095 lies within 0.0149 (one seed's relative spread, 16 %, over "
                               "its 2 seeds on cuda, borrowed)")
    assert _statuses([_cell(0, "cpu", 5.0, 100.0), *cuda])[0] == "within"  # 0.05, 0.0079 from it: far from 0.1
    alone = _statuses([_cell(0, "cpu", 9.5, 100.0)])
    assert alone == ["within (one seed on this device: no seed spread to weigh it against)"]
    assert _statuses([_cell(0, "cpu", 9.5, 100.0, rounds=20)]) == ["not gated (K = 20 < 50)"]
