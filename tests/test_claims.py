"""The shared claim helper (report/claims.py): one verdict per claim, on constructed inputs."""

from __future__ import annotations

from unlearning.report import claims as cl


def test_an_unmet_precondition_makes_the_claim_not_testable_naming_it():
    carried = cl.carried(12.0, 10.0, 20.0, "backdoor ASR", " %")
    status, reason = cl.judge(True, [carried])
    assert status == cl.NOT_TESTABLE and "original 12 % against 10 %" in reason and "needs > 20 %" in reason
    assert cl.judge(False, [cl.carried(96.0, 7.4, 20.0, "backdoor ASR")])[0] == cl.FAILS
    assert cl.judge(True, [cl.carried(96.0, 7.4, 20.0, "backdoor ASR")])[0] == cl.HOLDS


def test_a_near_one_class_model_or_a_chance_metric_is_not_testable():
    assert cl.judge(True, [cl.not_one_class(0.986, "R2D's predictions")]) == (
        cl.NOT_TESTABLE, "R2D's predictions: 98.6 % of predictions in one class (needs <= 95 %)")
    assert cl.judge(True, [cl.above(0.51, 0.55, "attack AUC on the original")])[0] == cl.NOT_TESTABLE


def test_a_test_that_cannot_fail_is_uninformative_and_left_out_of_the_headline():
    rows = [cl.row("x", "a", "1", cl.judge(True), "s", 0.5),
            cl.row("x", "b", "2", cl.judge(False), "s", -1.0),
            cl.row("x", "c", "3", cl.judge(True, cannot_fail="every point at the floor"), "s", 2.0),
            cl.row("x", "d", "4", cl.judge(None), "s")]
    assert [r["status"] for r in rows] == [cl.HOLDS, cl.FAILS, cl.UNINFORMATIVE, cl.NOT_TESTABLE]
    assert rows[2]["margin"] is None and rows[2]["reason"] == "every point at the floor"
    assert cl.headline(r["status"] for r in rows) == "1 of 2 informative claims hold; 1 not testable, 1 uninformative"
    assert cl.headline([cl.UNINFORMATIVE]) == "no informative claim; 1 uninformative"


def test_a_trend_moves_only_on_its_points_above_the_floor():
    assert cl.movable([93.0, 40.0, 9.0, 8.0], floor=7.4, margin=3.0) == [93.0, 40.0]


def test_a_comparison_against_a_one_class_or_at_chance_loser_is_uninformative():
    """issue 56: beating a model at chance is as trivial as beating a one-class one."""
    at_chance = [cl.not_one_class(0.6, "CNS"), cl.below(0.487, 0.45, "CNS: balanced test error")]
    why = cl.trivial_comparison(at_chance)
    assert why == "CNS: balanced test error: 0.487 (needs < 0.45): any model above chance beats it"
    assert cl.judge(True, [], why)[0] == cl.UNINFORMATIVE
    assert "98.6 % of predictions in one class" in cl.trivial_comparison([cl.not_one_class(0.986, "CNS")])
    assert cl.trivial_comparison([cl.not_one_class(0.6, "CNS"), cl.below(0.30, 0.45, "CNS")]) is None


def test_one_seed_carries_only_beyond_twice_its_sampling_error():
    """issue 69 item 5: R2D eicu_like's gap 0.037 passes the 2/m margin (0.003) but not twice its binomial standard
    error (0.040 on m = 675): not shown; a wider gap is."""
    se = ((0.145 * 0.855 + 0.182 * 0.818) / 675) ** 0.5
    assert not cl.carried_paired([0.037], 2 / 675, "gap", se=se).ok
    assert "twice its sampling standard error, 0.04" in cl.carried_paired([0.037], 2 / 675, "gap", se=se).what
    assert cl.carried_paired([0.045], 2 / 675, "gap", se=se).ok and cl.carried_paired([0.037], 2 / 675, "gap").ok


def test_a_trend_holds_only_where_most_seeds_show_it():
    """A pooled z far past its critical value on the one seed of five whose curve can move is no trend: None, with
    the count; three of five moving the expected way decide it."""
    test, text = cl.per_seed([-0.05], [0.005], -1, seeds=5)
    assert test is None and "1 of 5 seeds show it" in text
    assert cl.per_seed([-0.05, -0.04, -0.06], [0.005] * 3, -1, seeds=5)[0] is True
    assert cl.per_seed([-0.05], [0.005], -1)[0] is True  # one seed of one
