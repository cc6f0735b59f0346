"""RR-DU's claims on constructed results: the verdict kinds follow from the originals, the streams and the sweeps."""

from __future__ import annotations

import pandas as pd

from unlearning.experiments.rrdu import report
from unlearning.report import claims as cl
from unlearning.report.compare import dataset_labels, kind


def _rec(asr: float, clean: float = 90.0, tail: float | None = None, **extra) -> dict:
    summary = {"final": asr, "tail_mean": asr if tail is None else tail, "tail_min": asr, "tail_hops": 20,
               "u_visit_hops": [3, 50], "last_u_visit": 50, "between_visits": [asr], "after_visits": [asr]}
    return {"final": {"clean": clean, "asr": asr}, "summary": summary, "u_visits": 2, "first_round_asr_le_15": 110,
            **extra}


def _results(original_asr: float = 96.0, rrdu_asr: float = 8.0, eps_tails=(60.0, 30.0, 9.0, 8.0),
             stream_tails=(8.0, 8.0, 8.0), original_clean: float = 91.0):
    """One seed's original, Table 3 and the ablations of a stand-in, scratch at 7.4 % ASR."""
    seeds = [{"dataset": "fashion_mnist", "seed": 0, "paper_column": "mnist",
              "original": {"final": {"asr": original_asr, "clean": original_clean}},
              "table3": [{**_rec(9.0), "p": p, "stream": k} for p in (0.0, 0.1, 1.0) for k in range(3)]}]
    for rec in seeds[0]["table3"][6:]:
        rec["final"]["clean"] = 10.0  # p = 1 collapses
    sweep = lambda key, vals, tails: [{**_rec(t, tail=t), "value": v, "is_baseline": False, key: v,  # noqa: E731
                                       "clipped": key == "L"} for v, t in zip(vals, tails)]
    baseline = {**_rec(rrdu_asr), "epsilon": 1.0, "rho": 10.82, "L": 0.5, "delta": 1e-5}
    ablations = [{"dataset": "fashion_mnist", "seed": 0, "T": 100, "paper_column": "mnist", "baseline": baseline,
                  "streams": [{"stream": k, "rrdu": _rec(rrdu_asr, tail=t), "finetune": _rec(20.0 + k)}
                              for k, t in enumerate(stream_tails)],
                  "sweeps": {"epsilon": sweep("epsilon", (0.1, 0.5, 2.0, 10.0), eps_tails),
                             "rho": sweep("rho", (5.0, 50.0), (8.0, 8.0)),
                             "delta": sweep("delta", (1e-4,), (8.5,)), "L": sweep("L", (0.1, 1.0), (8.0, 9.0))},
                  "baselines": {"finetune": _rec(20.0), "ddp": _rec(35.0, clean=85.0),
                                "dpsgd": _rec(60.0, clean=80.0)},
                  "scratch": {"marks": {"100": {"asr": 7.4, "clean": 91.0, "tail_mean": 7.5}}}}]
    return seeds, ablations


def _status(table: pd.DataFrame, start: str) -> str:
    return table[table.claim.str.startswith(start)].status.item()


def test_claims_hold_or_fail_where_the_original_carried_the_backdoor():
    table = report.claims(*_results())
    assert _status(table, "RR-DU's final ASR within 3 points of scratch's") == cl.HOLDS
    assert _status(table, "final ASR: RR-DU <= fine-tuning + 2") == cl.HOLDS
    assert _status(table, "ASR non-increasing as epsilon grows") == cl.HOLDS
    assert _status(table, "p = 1 collapses") == cl.HOLDS
    table = report.claims(*_results(rrdu_asr=30.0, eps_tails=(30.0, 40.0, 9.0, 8.0)))
    assert _status(table, "RR-DU's final ASR within 3 points of scratch's") == cl.FAILS
    assert _status(table, "ASR non-increasing as epsilon grows") == cl.FAILS  # 30 -> 40 between movable points


def test_forgetting_claims_are_not_testable_when_the_original_did_not_carry_the_backdoor():
    table = report.claims(*_results(original_asr=20.0))
    assert _status(table, "the backdoor is learned before unlearning") == cl.FAILS
    row = table[table.claim.str.startswith("RR-DU's final ASR within 3")].iloc[0]
    assert row.status == cl.NOT_TESTABLE and "original 20 % against 7.4 %" in row.reason
    assert _status(table, "RR-DU's final clean accuracy within 1 point") in cl.INFORMATIVE  # needs no backdoor


def test_no_claim_is_tested_on_an_original_that_learned_no_clean_task():
    """An original that puts every image in the target class has an ASR of 100 % and a clean accuracy at chance
    (10 % on 10 classes; seen on the tiny CIFAR-10 column, tests/test_dataset_columns.py): it learned no backdoor,
    so every claim is not testable, with the clean accuracy as the reason, however its ASRs compare."""
    table = report.claims(*_results(original_asr=100.0, original_clean=10.0))
    assert set(table.status) == {cl.NOT_TESTABLE}
    assert all("clean accuracy (the lowest seed) against chance: original 10 % against 10 %" in r
               for r in table.reason)
    assert set(report.claims(*_results(original_asr=100.0, original_clean=21.0)).status) != {cl.NOT_TESTABLE}


def test_a_trend_whose_points_sit_at_the_scratch_floor_is_uninformative():
    table = report.claims(*_results(eps_tails=(9.0, 8.0, 8.0, 8.0)))
    row = table[table.claim.str.startswith("ASR non-increasing as epsilon grows")].iloc[0]
    assert row.status == cl.UNINFORMATIVE and "within 3 points of scratch's ASR 7.4" in row.reason
    assert _status(table, "ASR non-increasing as rho grows") == cl.UNINFORMATIVE
    assert "informative claims hold" in cl.headline(table.status)


def test_a_sweep_within_what_a_change_of_stream_does_is_uninformative():
    """One stream per sweep value: where the baseline's last-hops ASR moves by 40 points between streams, a sweep
    spanning 30 cannot show a trend, and a rise smaller than that spread does not fail one."""
    table = report.claims(*_results(eps_tails=(40.0, 30.0, 20.0, 12.0), stream_tails=(10.0, 50.0, 20.0)))
    row = table[table.claim.str.startswith("ASR non-increasing as epsilon grows")].iloc[0]
    assert row.status == cl.UNINFORMATIVE and "within the 40.0 a change of unlearning stream" in row.reason
    assert _status(table, "delta in [1e-6, 1e-4] has no visible effect") == cl.UNINFORMATIVE  # 40 > 2 points
    table = report.claims(*_results(eps_tails=(60.0, 30.0, 35.0, 12.0), stream_tails=(8.0, 14.0, 10.0)))
    assert _status(table, "ASR non-increasing as epsilon grows") == cl.HOLDS  # 30 -> 35 is within 6
    table = report.claims(*_results(eps_tails=(60.0, 30.0, 45.0, 12.0), stream_tails=(8.0, 14.0, 10.0)))
    assert _status(table, "ASR non-increasing as epsilon grows") == cl.FAILS  # 30 -> 45 is beyond it


def test_the_mnist_column_on_the_subset_keeps_the_papers_value_beside_it_uncompared_and_says_so():
    """Table 3 on MNIST itself is compared with the paper's; on the 5,000-digit subset (the result's `data`) the
    same numbers get the paper's value beside them, `not comparable: subset`, and the tables name the subset."""
    seeds, _ = _results()
    full = [{**seeds[0], "dataset": "mnist", "data": "mnist"}]
    subset = [{**seeds[0], "dataset": "mnist", "data": "mnist_5k"}]
    compared = report.table3(full, {})
    assert {kind(s) for s in compared[compared.dataset == "mnist"].status} <= {"within", "outside"}
    table = report.table3(subset, {})
    rows = table[table.dataset == "mnist"]
    assert len(rows) == 3 and rows.paper_asr.notna().all()
    assert set(rows.status) == {"not comparable: subset (real MNIST, 5,000-digit subset); judged by the claims"}
    assert dataset_labels(subset) == {"mnist": "mnist (real MNIST, 5,000-digit subset)"}
    assert dataset_labels(full) == {"mnist": "mnist"}
    assert dataset_labels(seeds) == {"fashion_mnist": "fashion_mnist"}  # a stand-in keeps its name


def test_the_originals_table_applies_the_claims_carried_rule():
    """issue 56: one rule, stated once. An original at 85.2 % ASR (below the paper's 90 %) carried the backdoor by the
    claims' precondition (scratch 7.4 % + 20 points), so the originals table says yes, as the claims judge it; the
    paper's '> 90 %' stays a claim of its own, which fails."""
    def table(asr):
        seeds, ablations = _results(original_asr=asr)
        seeds[0]["original"].update(hops=100, u_visits=4, last_u_visit=97)
        seeds[0]["original"]["final"].update(forget_asr=90.0, asr_nontarget=80.0)
        seeds[0]["rho_heuristic"] = 10.0
        return report.originals_table(seeds, ablations), report.claims(seeds, ablations)

    originals, claims = table(85.2)
    assert originals.carried.iloc[0] == ("yes: ASR against scratch's: original 85.2 % against 7.4 % (gap 77.8 %, "
                                         "needs > 20 %)")
    assert _status(claims, "the backdoor is learned before unlearning") == cl.FAILS
    assert _status(claims, "RR-DU's final ASR within 3 points of scratch's") in cl.INFORMATIVE
    originals, claims = table(25.0)
    assert originals.carried.iloc[0].startswith("no: ASR against scratch's: original 25 %")
    assert _status(claims, "RR-DU's final ASR within 3 points of scratch's") == cl.NOT_TESTABLE


def test_a_paper_cell_is_decided_only_where_its_gap_clears_the_spread_over_seeds_and_streams():
    """A cell on a paper dataset: each metric's mean against its tolerance (clean 1 point, ASR 3), decided only where
    |ours - paper| lies farther from the tolerance than the mean's standard error over the records; one record gives
    no spread, and the status says so."""
    run = {"dataset": "mnist", "paper_column": "mnist", "data": "mnist"}
    status = report._status
    assert status(run, [90.0, 90.2, 89.8], [10.0, 10.5, 9.5], 90.0, 10.0) == "within"
    assert status(run, [90.0, 90.2, 89.8], [20.0, 20.5, 19.5], 90.0, 10.0) == "outside (ASR)"
    # ASR's gap 3.5 lies 0.5 past the tolerance, inside its standard error (about 2.9): decides nothing
    undecided = status(run, [90.0, 90.2, 89.8], [8.5, 18.5, 13.5], 90.0, 10.0)
    assert kind(undecided) == "uninformative" and undecided.startswith("uninformative (ASR: |ours - paper| = 3.5")
    # one decided outside outweighs an undecided one
    assert status(run, [95.0, 95.2, 94.8], [8.5, 18.5, 13.5], 90.0, 10.0) == "outside (clean)"
    one = status(run, [90.0], [10.5], 90.0, 10.0)
    assert kind(one) == "within" and "one seed" in one


def test_within_scratch_or_fine_tuning_is_decided_only_beyond_the_streams_standard_error():
    """issue 69: the record's streams end at 6.8, 22.4 and 30.4 % ASR (standard error 6.9) against scratch's 7.4:
    12.5 points apart, 9.5 past the 3-point tolerance, so it fails; streams at 2, 8 and 25 % (mean 11.7, standard
    error 6.9) lie 4.3 points apart, 1.3 past it: that decides nothing."""
    def claims(asrs, cleans=(90.0, 90.0, 90.0), tuned=(91.94, 91.84, 92.04)):
        seeds, ablations = _results()
        for stream, asr, clean, ft in zip(ablations[0]["streams"], asrs, cleans, tuned):
            stream["rrdu"]["final"].update(asr=asr, clean=clean)
            stream["finetune"]["final"]["clean"] = ft
        return report.claims(seeds, ablations)

    within = "RR-DU's final ASR within 3 points of scratch's"
    assert _status(claims((6.8, 22.4, 30.4)), within) == cl.FAILS
    row = claims((2.0, 8.0, 25.0)).set_index("claim").loc[f"{within} (100 hops)"]
    assert row.status == cl.UNINFORMATIVE and "4.27 apart, within 6.89" in row.reason
    assert "standard error 6.89" in row.measured
    clean = "RR-DU's final clean accuracy within 1 point of fine-tuning's"
    assert _status(claims((8.0, 8.0, 8.0), (89.37, 91.12, 90.45)), clean) == cl.FAILS  # 1.63 apart, se 0.51
    assert _status(claims((8.0, 8.0, 8.0), (88.0, 91.0, 92.0)), clean) == cl.UNINFORMATIVE  # 1.67 apart, se 1.20
    assert _status(claims((8.0, 8.0, 8.0), (91.5, 91.9, 92.3)), clean) == cl.HOLDS  # 0.04 apart, se 0.24


def test_a_comparison_with_the_baselines_is_decided_only_beyond_the_streams_standard_error():
    """issue 69: "RR-DU's clean accuracy above DDP's and DP-SGD's" and "RR-DU <= fine-tuning + 2" compare means over
    the streams; a gap inside the difference's standard error decides nothing. The record: RR-DU 90.31 (streams
    89.37 / 91.12 / 90.45, se 0.51) against DDP 91.29, 0.98 below: fails."""
    def claims(cleans, ddp_clean=91.29, asrs=(8.0, 8.0, 8.0), tuned=(20.0, 21.0, 22.0)):
        seeds, ablations = _results()
        ablations[0]["baselines"]["ddp"]["final"]["clean"] = ddp_clean
        for stream, clean, asr, ft in zip(ablations[0]["streams"], cleans, asrs, tuned):
            stream["rrdu"]["final"].update(clean=clean, asr=asr)
            stream["finetune"]["final"]["asr"] = ft
        return report.claims(seeds, ablations).set_index("claim")

    above = "RR-DU's clean accuracy above DDP's and DP-SGD's"
    assert claims((89.37, 91.12, 90.45)).loc[above].status == cl.FAILS  # 0.98 below, se 0.51
    row = claims((89.37, 91.12, 90.45), ddp_clean=90.6).loc[above]  # 0.29 below, inside 0.51
    assert row.status == cl.UNINFORMATIVE and "-0.287, within 0.51 (the difference's standard error" in row.reason
    assert "standard error 0.51" in row.measured
    assert claims((92.0, 92.2, 92.4)).loc[above].status == cl.HOLDS  # 0.91 above, se 0.12
    tuned = "final ASR: RR-DU <= fine-tuning + 2 points"
    assert claims((90.0,) * 3, asrs=(20.0, 24.0, 28.0)).loc[tuned].status == cl.UNINFORMATIVE  # 23 vs 24 +- 2.5
    assert claims((90.0,) * 3, asrs=(40.0, 41.0, 42.0)).loc[tuned].status == cl.FAILS


def test_fine_tuning_against_ddp_and_dpsgd_fails_only_beyond_fine_tunings_spread():
    """issue 69: "fine-tuning < DDP" compared the ASRs against fine-tuning's spread over the streams one way only: the
    record's fine-tuning 95.0 (spread 1.0) against DDP's 94.8, 0.2 apart, read "fails". A difference inside the spread
    decides nothing either way; one beyond it above fine-tuning's fails."""
    def status(ddp_asr, tuned=(94.6, 94.8, 95.6)):
        seeds, ablations = _results()
        ablations[0]["baselines"]["ddp"]["final"]["asr"] = ddp_asr
        for stream, ft in zip(ablations[0]["streams"], tuned):
            stream["finetune"]["final"]["asr"] = ft
        row = report.claims(seeds, ablations).set_index("claim").loc[
            "final ASR: fine-tuning < DDP, by more than fine-tuning's spread over the streams"]
        return row.status, row.reason

    assert status(94.8)[0] == cl.UNINFORMATIVE and "-0.2, lies within fine-tuning's spread 1.0" in status(94.8)[1]
    assert status(93.0)[0] == cl.FAILS  # 2 below fine-tuning's 95.0
    assert status(96.5)[0] == cl.HOLDS
    assert status(95.5, tuned=(95.0, 95.0, 95.0))[0] == cl.HOLDS  # one spread of 0: any gap decides


def test_epsilon_01_leaves_the_highest_asr_is_uninformative_where_no_asr_could_lie_beyond_the_spread():
    """issue 69: "epsilon = 0.1 leaves the highest ASR" fails only where another epsilon's ASR lies more than the
    streams' spread above epsilon 0.1's; where that would need an ASR above 100 % the claim cannot fail (the MNIST
    subset's quick record: 87.2 % with a spread of 55.3)."""
    claim = "epsilon = 0.1 leaves the highest ASR"
    wide = _results(eps_tails=(80.0, 30.0, 9.0, 8.0), stream_tails=(8.0, 40.0, 70.0))  # spread 62
    row = report.claims(*wide).set_index("claim").loc[claim + " (last-hops mean)"]
    assert row.status == cl.UNINFORMATIVE and "reaches 100 %" in row.reason
    assert _status(report.claims(*_results(eps_tails=(60.0, 30.0, 9.0, 8.0))), claim) == cl.HOLDS  # spread 0
    assert _status(report.claims(*_results(eps_tails=(20.0, 30.0, 9.0, 8.0))), claim) == cl.FAILS


def test_the_reports_setup_states_each_scales_walk_from_the_params(params):
    """The setup bullet states both scales' training walk as params.yaml resolves them and follows an edit (it once
    quoted quick's walk as 30 hops of 2 epochs after quick had moved to 60 hops of 1)."""
    import copy

    from unlearning.config import check_params, scale_configs
    from unlearning.experiments.rrdu.steps import config

    edited = copy.deepcopy(params)
    edited["rrdu"]["quick"]["train"].update(hops=45, epochs=3)
    run = check_params({**edited, "scale": "quick"})
    text = next(line for line in report.choices(config(run), [], [], scale_configs(run, "rrdu"))
                if line.startswith("- Training"))
    assert "quick (rrdu.quick, its own settings) T = 45 hops of 3 local epoch(s), batch 16" in text
    assert "paper T = 100 hops of 1 local epoch(s), batch 64, lr 0.005, the official shards" in text


def test_a_stream_that_never_reaches_15_percent_reads_never():
    """'Forgets faster': a p = 0 stream that never gets to ASR <= 15 % is written "never" (not Python's None), and
    p = 0.1 reaching it first holds."""
    seeds, ablations = _results()
    for rec in seeds[0]["table3"]:
        if rec["p"] == 0.0:
            rec["first_round_asr_le_15"] = None
    row = report.claims(seeds, ablations).set_index("claim").filter(like="no more rounds than p = 0", axis=0).iloc[0]
    assert row.status == cl.HOLDS and "p=0.1 round 110, p=0 round never" in row.measured and "None" not in row.measured
