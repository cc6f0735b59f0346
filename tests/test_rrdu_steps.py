"""RR-DU's experiment steps on a tiny synthetic setting: the ablation runs share their streams (a sweep at the
default value reproduces the baseline exactly), the checkpoint round-trips, and re-running gives the same
numbers."""

from __future__ import annotations

import copy
import json

import pytest
import torch

from unlearning.data.sources.synthetic import synthetic
from unlearning.experiments.rrdu import steps
from unlearning.experiments.rrdu.layout import ABLATION_PARTS, ablation_parts
from unlearning.files import save_tensors


def make_tiny(params, tmp_path, device="auto"):
    path = tmp_path / "synthetic.safetensors"
    save_tensors(path, synthetic(0))
    p = copy.deepcopy(params)
    p["device"] = device
    p["rrdu"].update(datasets={"synthetic": p["rrdu"]["datasets"]["mnist"]}, clients=4, train_per_client=30,
                     quick={}, seeds=[0])
    p["rrdu"]["train"].update(hops=1, batch_size=16)
    p["rrdu"]["unlearn"].update(hops=4, p=0.5)
    p["rrdu"]["backdoor"]["test_size"] = 50
    p["rrdu"]["eval"].update(test_images=50, every=2)
    return steps.make_setup(p, "synthetic", 0, str(path)), tmp_path


@pytest.fixture
def tiny_setup(params, tmp_path):
    return make_tiny(params, tmp_path)


def test_sweep_runs_share_streams_and_the_checkpoint_round_trips(tiny_setup):
    setup, tmp = tiny_setup
    ev = steps.Evaluator(setup)
    token = steps.new_token(setup)
    steps.train_original(setup, token, ev, 0)
    snap = steps.snapshot(token)
    steps.save_checkpoint(str(tmp / "ck.safetensors"), snap, {"x": "y"})
    loaded = steps.load_checkpoint(str(tmp / "ck.safetensors"), setup.device)
    assert torch.equal(loaded.theta, snap.theta) and torch.equal(loaded.state.exp_avg, snap.state.exp_avg)
    default = steps.rrdu_config(setup)
    a, _ = steps.run_rrdu(setup, token, loaded, default, ev, "baseline", 2, True)
    b, _ = steps.run_rrdu(setup, token, snap, default, ev, "again", 2, True)
    assert a["final"] == b["final"] and a["curve"] == b["curve"] and a["u_visits"] > 0
    noisy, _ = steps.run_rrdu(setup, token, snap, steps.rrdu_config(setup, epsilon=0.01, rho=1.0), ev, "x", 0, False)
    assert noisy["u_visits"] == a["u_visits"]  # the same routing
    assert noisy["projected"] > 0  # the kick leaves the radius-1 ball at u; the projection brings it back


def test_the_walk_runs_where_params_put_it(params, tmp_path, device):
    """The token's model, its snapshots and a reloaded checkpoint live on params' device (the data and the streams
    stay on the CPU and their batches move); RR-DU and the three baselines run there (on CUDA under --device cuda)."""
    setup, tmp = make_tiny(params, tmp_path, device.type)
    ev = steps.Evaluator(setup)
    token = steps.new_token(setup)
    steps.train_original(setup, token, ev, 0)
    steps.save_checkpoint(str(tmp / "ck.safetensors"), steps.snapshot(token), {})
    snap = steps.load_checkpoint(str(tmp / "ck.safetensors"), setup.device)
    on = {t.device.type for t in [*token.model.parameters(), *token.model.buffers(), snap.theta, snap.state.exp_avg,
                                  *snap.buffers.values()]}
    assert setup.device.type == device.type and on == {device.type}
    record, _ = steps.run_rrdu(setup, token, snap, steps.rrdu_config(setup, epsilon=1.0), ev, "x", 2, True)
    assert record["u_visits"] > 0 and record["sigma"] > 0 and 0 <= record["final"]["asr"] <= 100
    out, _ = steps.baselines(setup, token, snap, ev, 2, 2, 16)
    assert set(out) == {"finetune", "ddp", "dpsgd"} and all(0 <= r["final"]["clean"] <= 100 for r in out.values())
    assert {p.device.type for p in token.model.parameters()} == {device.type}


def test_diverging_run_stops_naming_the_hop(tiny_setup):
    setup, _ = tiny_setup
    ev = steps.Evaluator(setup)
    token = steps.new_token(setup)
    snap = steps.snapshot(token)
    with pytest.raises(FloatingPointError, match=r"x: the loss or the weights are not finite at hop 1"):
        steps.run_rrdu(setup, token, snap, steps.rrdu_config(setup, sigma=1e300, rho=None, p=1.0), ev, "x",
                       0, False)


def test_exact_mode_runs_from_the_pipeline_step(params, tmp_path):
    """rrdu.unlearn.mode: exact through the rrdu-seed step (issue 34: it crashed at the first u-visit): u's retained
    data reaches the u-steps, which descend on it; the records say which mode ran."""
    import yaml

    from conftest import tiny_params
    from unlearning.__main__ import main

    p = tiny_params(copy.deepcopy(params))
    p["rrdu"]["unlearn"]["mode"] = "exact"
    p["rrdu"]["table3"].update(ps=[1.0], semantics=[])
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(p))
    save_tensors(tmp_path / "synthetic.safetensors", synthetic(0))
    files = {f"--{k}": str(tmp_path / f"{k}.{ext}") for k, ext in (("out", "json"), ("timing", "json"),
                                                                    ("checkpoint", "safetensors"))}
    assert main(["rrdu-seed", "--params", str(tmp_path / "params.yaml"), "--dataset", "synthetic", "--seed", "0",
                 "--processed", str(tmp_path / "synthetic.safetensors"), *[x for kv in files.items() for x in kv]]) == 0
    result = json.loads((tmp_path / "out.json").read_text())
    runs = result["table3"]
    assert len(runs) == 2 and all(r["mode"] == "exact" and r["u_visits"] == 4 for r in runs)  # p = 1: every hop at u
    assert all(r["anatomy"]["u_steps"] == 4 and r["anatomy"]["cosine"] > 0 for r in runs)  # steps along -g (descent)


@pytest.mark.slow  # runs RR-DU's seed and ablation steps end to end: the full suite's, not the edit loop's (issue 40)
def test_the_ablation_parts_are_separate_jobs_joined_into_one_file(params, tmp_path):
    """The ablations run as four jobs (any order, each its own process), joined by rrdu-ablations-merge into the
    file the report reads; a wrong part name or a missing part is refused before anything runs."""
    import yaml

    from conftest import tiny_params
    from unlearning.__main__ import main

    p = tiny_params(copy.deepcopy(params))
    p["rrdu"]["table3"].update(ps=[1.0], semantics=[])
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(p))
    data = str(tmp_path / "synthetic.safetensors")
    save_tensors(data, synthetic(0))
    common = ["--params", str(tmp_path / "params.yaml"), "--dataset", "synthetic", "--processed", data]
    ck = str(tmp_path / "ck.safetensors")
    assert main(["rrdu-seed", *common, "--seed", "0", "--out", str(tmp_path / "s.json"), "--timing",
                 str(tmp_path / "st.json"), "--checkpoint", ck]) == 0
    with pytest.raises(ValueError, match="--part: 'sweeps' is not one of baseline, sensitivity, baselines, scratch"):
        steps.step_ablation_part(p, "synthetic", data, ck, "sweeps", str(tmp_path / "x.json"), str(tmp_path / "y.json"))
    off = {**p, "rrdu": {**p["rrdu"], "sensitivity": False}}  # issue 70 item 1: the reading at the paper scale only
    with pytest.raises(ValueError,
                       match=r"'sensitivity' is not one of baseline, baselines, scratch \(rrdu.sensitivity: false"):
        steps.step_ablation_part(off, "synthetic", data, ck, "sensitivity", str(tmp_path / "x.json"),
                                 str(tmp_path / "y.json"))
    out = {part: (str(tmp_path / f"{part}.json"), str(tmp_path / f"{part}_t.json")) for part in ABLATION_PARTS}
    for part in reversed(ABLATION_PARTS):
        assert main(["rrdu-ablations", *common, "--part", part, "--checkpoint", ck, "--out", out[part][0],
                     "--timing", out[part][1]]) == 0
    results, timings = [o for o, _ in out.values()], [t for _, t in out.values()]
    with pytest.raises(ValueError, match="need one file per part baseline, sensitivity, baselines, scratch"):
        steps.merge_ablations(results[:3], timings, str(tmp_path / "m.json"), str(tmp_path / "mt.json"))
    steps.merge_ablations(results, timings, str(tmp_path / "m.json"), str(tmp_path / "mt.json"))
    merged = json.loads((tmp_path / "m.json").read_text())
    assert {"before", "baseline", "sweeps", "sensitivity", "baselines", "streams", "scratch", "rrdu_cost",
            "config"} <= merged.keys() and "part" not in merged
    assert [s["stream"] for s in merged["streams"]] == list(range(p["rrdu"]["unlearn"]["streams"]))
    assert merged["streams"][0]["rrdu"]["final"] == merged["baseline"]["final"]
    assert merged["streams"][0]["finetune"]["final"] == merged["baselines"]["finetune"]["final"]
    t = json.loads((tmp_path / "mt.json").read_text())
    assert {"baseline_s", "sweeps", "sensitivity", "baselines", "scratch", "evaluation_s"} <= t.keys()
    assert not (tmp_path / "x.json").exists()
    without = [i for i, part in enumerate(ABLATION_PARTS) if part != "sensitivity"]
    steps.merge_ablations([results[i] for i in without], [timings[i] for i in without], str(tmp_path / "w.json"),
                          str(tmp_path / "wt.json"))
    short = json.loads((tmp_path / "w.json").read_text())
    assert short["sensitivity"] is None and {k: v for k, v in short.items() if k != "sensitivity"} == {
        k: v for k, v in merged.items() if k != "sensitivity"}
    assert ablation_parts({"sensitivity": False}) == ("baseline", "baselines", "scratch")


def test_the_walk_summary_reads_the_hops_around_the_visits_and_the_tail():
    """Between visits: the hop that ends each stretch of descent after an earlier visit; after visits: the last of
    each run of consecutive visits; the last TAIL hops; only those hops are evaluated."""
    visits = [3, 4, 10, 40]
    assert steps.between(visits) == [9, 39] and steps.after(visits, 40) == [4, 10, 40]
    assert steps.summary_hops(40, visits) == frozenset(range(21, 41)) | {4, 9, 10}
    asr = {t: float(t) for t in steps.summary_hops(40, visits)}
    s = steps.asr_summary(asr, 40, visits)
    assert (s["final"], s["tail_min"], s["tail_mean"], s["last_u_visit"]) == (40.0, 21.0, 30.5, 40)
    assert s["between_visits"] == [9.0, 39.0] and s["after_visits"] == [4.0, 10.0, 40.0]
    assert steps.summary_hops(40, list(range(1, 41))) == frozenset(range(21, 41))  # p = 1: the tail only
