"""The RMIA attack (evaluate/attacks/rmia.py): its formulas on hand-computed numbers, then end to end on a model
that memorised its members (strong at 1 % FPR) and on one that never saw them (chance)."""

import numpy as np
import pytest
import torch

from unlearning.evaluate.attacks import RMIA, rmia


def test_offline_marginal_is_the_papers_linear_approximation():
    p_ref = np.array([[0.2, 0.8], [0.4, 0.6]])
    # ((1 + a) mean_OUT + (1 - a)) / 2 with a = 0.3: mean_OUT = 0.3, 0.7
    assert rmia.marginal(p_ref, a=0.3) == pytest.approx([(1.3 * 0.3 + 0.7) / 2, (1.3 * 0.7 + 0.7) / 2])
    assert rmia.marginal(p_ref, a=1.0) == pytest.approx([0.3, 0.7])  # a = 1: the OUT mean itself
    # online: a sample some reference trained on takes the plain mean over all references
    member = np.array([[True, False], [False, False]])
    assert rmia.marginal(p_ref, member, a=0.3) == pytest.approx([0.3, (1.3 * 0.7 + 0.7) / 2])


def test_score_is_the_fraction_of_population_samples_beaten():
    # a = 1 so Pr = the reference mean; ratio_x = 0.9 / 0.3 = 3; population ratios 1, 2, 4
    s = rmia.scores([0.9], [[0.3]], [0.1, 0.2, 0.4], [[0.1, 0.1, 0.1]], a=1.0, gamma=1.0)
    assert s == pytest.approx([2 / 3])
    assert rmia.scores([0.9], [[0.3]], [0.1, 0.2, 0.4], [[0.1, 0.1, 0.1]], a=1.0, gamma=2.0) == pytest.approx([1 / 3])
    # ties count (LR >= gamma)
    assert rmia.scores([0.2], [[0.1]], [0.2], [[0.1]], a=1.0) == pytest.approx([1.0])


def test_tpr_at_fpr_reads_the_roc_curve():
    members = np.array([0.9, 0.8, 0.3, 0.2])
    nonmembers = np.linspace(0.0, 0.5, 100)  # every member above 0.5 is caught at FPR 0
    assert rmia.tpr_at_fpr(members, nonmembers, 0.01) == pytest.approx(0.5)
    m = rmia.metrics(members, nonmembers)
    assert m["tpr_at_0.01_fpr"] == pytest.approx(0.5) and m["resolved_0.01"] and not m["resolved_0.001"]


def test_bad_inputs_name_what_is_wrong():
    with pytest.raises(ValueError, match="p_ref"):
        rmia.scores([0.5, 0.5], [[0.5]], [0.5], [[0.5]])
    with pytest.raises(ValueError, match="a = 2"):
        rmia.marginal(np.ones((1, 1)), a=2)
    with pytest.raises(ValueError, match="non-finite"):
        rmia.scores([float("nan")], [[0.5]], [0.5], [[0.5]])


def _train(x, y, seed, steps=300):
    """A small MLP fitted full-batch until it memorises (x, y)."""
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(x.shape[1], 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(x), y).backward()
        opt.step()
    return model


@pytest.fixture(scope="module")
def world():
    """Random-label data: only memorisation tells members apart. Candidates: 200 members of the target's
    training set and 200 non-members; population: 2,000 more (RMIA's score resolves 1 / 2,000); two OUT reference
    models on disjoint other data; the data a never-seen model trains on."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(5000, 20, generator=g)
    y = torch.randint(0, 10, (5000,), generator=g)
    members, nonmembers, pop = slice(0, 200), slice(200, 400), slice(400, 2400)
    refs = [_train(x[2400 + 800 * k:3200 + 800 * k], y[2400 + 800 * k:3200 + 800 * k], 10 + k) for k in range(2)]

    def probs(model, s):
        with torch.no_grad():
            return rmia.true_label_probs(model(x[s]), y[s])

    ref_c = np.stack([np.r_[probs(r, members), probs(r, nonmembers)] for r in refs])
    ref_z = np.stack([probs(r, pop) for r in refs])
    return x, y, members, nonmembers, pop, ref_c, ref_z, probs


def _attack(model, world):
    x, y, members, nonmembers, pop, ref_c, ref_z, probs = world
    p_c = np.r_[probs(model, members), probs(model, nonmembers)]
    attack = RMIA().fit({"p_ref_pop": ref_z})
    s = attack.member_scores({"p_target": p_c, "p_ref": ref_c, "p_target_pop": probs(model, pop)})
    return attack.metrics(s[:200], s[200:])


def test_rmia_finds_the_members_of_a_model_that_memorised_them(world):
    x, y, members = world[0], world[1], world[2]
    m = _attack(_train(x[members], y[members], 1), world)
    assert m["auc"] > 0.95 and m["tpr_at_0.01_fpr"] > 0.4  # measured: 0.979 and 0.67


def test_rmia_is_at_chance_on_a_model_that_never_saw_them(world):
    x, y = world[0], world[1]
    m = _attack(_train(x[4000:5000], y[4000:5000], 2), world)  # trained on other data only
    assert abs(m["auc"] - 0.5) < 0.08 and m["tpr_at_0.01_fpr"] < 0.06  # measured: 0.526 and 0.03


def test_rmia_attack_equals_its_parts_with_online_population_marginal():
    """`RMIA.fit` with the references' membership of the population and `attack` compose `marginal`, `scores` and
    `metrics` exactly (the path both decentralized experiments take)."""
    rng = np.random.default_rng(3)
    p_t, p_ref = rng.uniform(0.05, 1, 60), rng.uniform(0.05, 1, (2, 60))
    p_t_pop, p_ref_pop = rng.uniform(0.05, 1, 300), rng.uniform(0.05, 1, (2, 300))
    pop_member = rng.uniform(size=(2, 300)) < 0.5
    got = RMIA(a=0.4).fit({"p_ref_pop": p_ref_pop, "pop_member": pop_member}).attack(p_t, p_ref, p_t_pop, 25)
    s = rmia.scores(p_t, p_ref, p_t_pop, p_ref_pop, a=0.4, pop_marginal=rmia.marginal(p_ref_pop, pop_member, 0.4))
    assert got == rmia.metrics(s[:25], s[25:])
    offline = RMIA(a=0.4).fit({"p_ref_pop": p_ref_pop}).attack(p_t, p_ref, p_t_pop, 25)
    s_off = rmia.scores(p_t, p_ref, p_t_pop, p_ref_pop, a=0.4)
    assert offline == rmia.metrics(s_off[:25], s_off[25:]) and offline != got


def test_tune_a_picks_the_constant_that_fits_the_references_in_out_relation():
    """rmia.tune_a (Zarifzadeh et al.'s choice of a on the references): where each sample's IN probability is
    exactly eq. 10's linear function of its OUT probability at a* (with per-reference jitter), and the samples' OUT
    levels differ, every reference playing the target separates its members best near a*; an a far from it does
    worse. One reference cannot tune anything."""
    rng = np.random.default_rng(0)
    k, n, a_star = 4, 400, 0.6
    q = rng.uniform(0.05, 0.95, n)  # each sample's OUT probability
    member = np.zeros((k, n), bool)
    for j in range(0, k, 2):
        half = rng.permutation(n)[: n // 2]
        member[j, half], member[j + 1] = True, True
        member[j + 1, half] = False
    p_in = a_star * q + (1 - a_star)
    p_ref = np.clip(np.where(member, p_in, q) * rng.uniform(0.97, 1.03, (k, n)), 0, 1)
    a, auc = rmia.tune_a(p_ref, member)
    assert set(auc) == {round(x, 2) for x in np.linspace(0, 1, 11)}
    assert auc[a] == max(auc.values()) and auc[a] > 0.9
    assert auc[a] > auc[0.0] + 0.05  # a = 0 (Pr(x) = (OUT + 1) / 2 everywhere) is measurably worse here
    with pytest.raises(ValueError, match="tune_a needs"):
        rmia.tune_a(p_ref[:1], member[:1])
