"""reference/cdfl: the paper's Tables I-IV parse, and their DU - RT gaps equal the derived gap table."""

import pytest

from unlearning.report.compare import read_reference

# DU - RT Test Acc gap in points, derived from Tables I-IV (Wu et al. 2026): (table, topology) -> dataset -> gap
GAPS = {
    (1, "ring"): {"cifar10": -3.71, "mnist": 0.29, "fashion_mnist": 0.16},
    (1, "erdos_renyi"): {"cifar10": -4.38, "mnist": 0.38, "fashion_mnist": 0.21},
    (2, "ring"): {"cifar10": -6.62, "mnist": 0.36, "fashion_mnist": -1.27},
    (2, "erdos_renyi"): {"cifar10": -7.42, "mnist": 3.05, "fashion_mnist": -1.15},
    (3, "ring"): {"cifar10": -1.32, "mnist": 6.30, "fashion_mnist": 0.14},
    (3, "erdos_renyi"): {"cifar10": -2.57, "mnist": 6.29, "fashion_mnist": 0.18},
    (4, "ring"): {"cifar10": -4.92, "mnist": 8.21, "fashion_mnist": -0.04},
    (4, "erdos_renyi"): {"cifar10": -4.76, "mnist": 5.45, "fashion_mnist": 0.16},
}


@pytest.mark.parametrize("table", [1, 2, 3, 4])
def test_table_parses_and_is_complete(table):
    df = read_reference("cdfl", f"table{table}")
    assert list(df.columns) == ["topology", "dataset", "method", "test_acc", "test_acc_std", "mia_acc", "mia_acc_std",
                                "test_acc_bold", "mia_acc_bold"]
    assert len(df) == 12
    assert set(map(tuple, df[["topology", "dataset", "method"]].values)) == {
        (t, d, m) for t in ("ring", "erdos_renyi") for d in ("cifar10", "mnist", "fashion_mnist") for m in ("rt", "du")}
    assert df[["test_acc", "mia_acc"]].apply(lambda c: c.between(40, 90)).all().all()
    assert df[["test_acc_std", "mia_acc_std"]].apply(lambda c: c.between(0, 5)).all().all()


@pytest.mark.parametrize("table", [1, 2, 3, 4])
def test_bold_marks_follow_the_papers_rule(table):
    """One bold entry per RT/DU pair and column: the higher Test Acc, the MIA Acc closer to 50."""
    df = read_reference("cdfl", f"table{table}").set_index(["topology", "dataset", "method"])
    for topo, data in {(t, d) for t, d, _ in df.index}:
        rt, du = df.loc[(topo, data, "rt")], df.loc[(topo, data, "du")]
        assert rt.test_acc_bold + du.test_acc_bold == 1
        assert rt.mia_acc_bold + du.mia_acc_bold == 1
        assert bool(du.test_acc_bold) == (du.test_acc > rt.test_acc)
        assert bool(du.mia_acc_bold) == (abs(du.mia_acc - 50) < abs(rt.mia_acc - 50))


def test_derived_gaps_equal_the_gap_table():
    for (table, topo), gaps in GAPS.items():
        df = read_reference("cdfl", f"table{table}")
        for dataset, gap in gaps.items():
            row = df[(df.topology == topo) & (df.dataset == dataset)].set_index("method")
            assert round(row.loc["du", "test_acc"] - row.loc["rt", "test_acc"], 2) == pytest.approx(gap, abs=1e-9), \
                (table, topo, dataset)


def test_paper_oddities_kept():
    t3, t4 = read_reference("cdfl", "table3"), read_reference("cdfl", "table4")
    mn = t3[(t3.dataset == "mnist") & (t3.method == "rt")]
    assert mn.test_acc.nunique() == 1 and mn.mia_acc.nunique() == 1
    er = t4[(t4.topology == "erdos_renyi") & (t4.dataset == "fashion_mnist") & (t4.method == "rt")]
    assert float(er.mia_acc_std.iloc[0]) == 0.0
