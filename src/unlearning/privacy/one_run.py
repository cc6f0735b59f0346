"""Auditing from one training run (Steinke, Nasr and Jagielski, NeurIPS 2023, "Privacy auditing with one (1)
training run"): m canaries, each included in the training data independently with probability 1/2; an auditor who
sees the output guesses "included" or "excluded" for r of them (abstaining on the rest) and is right v times.

If the mechanism is (epsilon, delta)-DP in each canary's inclusion, the number of correct guesses is stochastically
dominated by Binomial(r, e^epsilon / (1 + e^epsilon)) up to a delta term (their Theorem 5.2). `p_value` is the
probability of at least v correct guesses under that null hypothesis, computed as their paper's own code does it;
`epsilon_lower_bound` the largest epsilon the observed v refutes at the given confidence (bisection, as theirs).
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import ndtr, ndtri


def p_value(m: int, r: int, v: int, epsilon: float, delta: float) -> float:
    """P[at least v of r guesses correct] for a mechanism (epsilon, delta)-DP in each of m canaries (Theorem 5.2):
    P[Binomial(r, q) >= v] + 2 m delta max_i P[v > Binomial(r, q) >= v - i] / i, q = e^eps / (1 + e^eps)."""
    if not (0 <= v <= r <= m) or epsilon < 0 or not 0 <= delta <= 1:
        raise ValueError(f"one-run audit: m = {m}, r = {r}, v = {v}, epsilon = {epsilon}, delta = {delta}; valid: "
                         "0 <= v <= r <= m, epsilon >= 0, delta in [0, 1]")
    q = 1 / (1 + math.exp(-epsilon))  # the accuracy of epsilon-DP randomized response
    from scipy.stats import binom  # here: scipy.stats is a second of a job's start

    beta = float(binom.sf(v - 1, r, q))
    alpha = 0.0
    if v > 0 and delta > 0:  # their loop over i = 1..v, as cumulative sums: P[v > Binomial >= v - i] / i
        below = np.cumsum(binom.pmf(np.arange(v - 1, -1, -1), r, q))
        alpha = float(np.max(below / np.arange(1, v + 1)))
    return min(beta + alpha * delta * 2 * m, 1.0)


def epsilon_lower_bound(m: int, r: int, v: int, delta: float, confidence: float = 0.95) -> float:
    """The largest epsilon whose null hypothesis (epsilon, delta)-DP the v correct guesses of r reject at
    `confidence` (0 when none): with probability `confidence` the mechanism is not (epsilon', delta)-DP for any
    epsilon' below it. 30 bisection steps, as the paper's code."""
    p = 1 - confidence
    if not 0 < p < 1:
        raise ValueError(f"one-run audit: confidence = {confidence}; valid: a number in (0, 1)")
    low, high = 0.0, 1.0
    if p_value(m, r, v, low, delta) >= p:
        return 0.0
    while p_value(m, r, v, high, delta) < p:
        high += 1
    for _ in range(30):
        mid = (low + high) / 2
        if p_value(m, r, v, mid, delta) < p:
            low = mid
        else:
            high = mid
    return low


def power(m: int, r: int, epsilon: float, refutable: float, delta: float, confidence: float = 0.95) -> float:
    """The probability that r guesses among m canaries bound epsilon above `refutable` (epsilon_lower_bound at
    `delta` and `confidence`) when the mechanism is exactly `epsilon`-DP in each canary and the auditor sees it
    through its best test: each guess right independently with e^epsilon / (1 + e^epsilon) (randomized response).
    The bound grows with the correct guesses, so it is the binomial tail from the fewest that exceed `refutable`."""
    if epsilon_lower_bound(m, r, r, delta, confidence) <= refutable:
        return 0.0
    low, high = 0, r  # the bound at `high` exceeds refutable, at `low` it does not (checked next)
    if epsilon_lower_bound(m, r, 0, delta, confidence) > refutable:
        return 1.0
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (low, mid) if epsilon_lower_bound(m, r, mid, delta, confidence) > refutable else (mid, high)
    from scipy.stats import binom

    return float(binom.sf(high - 1, r, 1 / (1 + math.exp(-epsilon))))


# --- the bound from a hypothesized f-DP curve (Mahloujifar, Melis and Chaudhuri, ICML 2025) -------------------------


def gdp_rejected(mu: float, m: int, r: int, v: int, confidence: float = 0.95) -> bool:
    """Whether v correct of r guesses (m canaries, alphabet of 2: included or not) reject, at `confidence`, that
    the mechanism is mu-GDP in each canary (Mahloujifar, Melis and Chaudhuri 2025, "Auditing f-differential privacy
    in one run", their recursion for a guessing game with abstention and the Gaussian trade-off curve
    f(x) = Phi(Phi^-1(1 - x) - mu), whose inverse blow-up is x -> Phi(Phi^-1(x) - mu)). Starting from the
    correct and wrong guesses' shares of tau r / m (tau = 1 - confidence), the recursion runs down over the correct
    guesses; the observation is refuted when the mass it needs exceeds r / m."""
    if not (0 <= v <= r <= m) or r == 0 or mu < 0:
        raise ValueError(f"one-run audit: m = {m}, r = {r}, v = {v}, mu = {mu}; valid: 0 <= v <= r <= m, r >= 1, "
                         "mu >= 0")
    scale = (1 - confidence) * r / m
    correct, wrong = scale * v / r, scale * (r - v) / r
    for i in range(v - 1, -1, -1):
        blown = float(ndtr(ndtri(correct) - mu)) if correct > 0 else 0.0
        grown = max(wrong, blown)
        correct += i / (r - i) * (grown - wrong)
        wrong = grown
    return correct + wrong > r / m


def gdp_mu_lower_bound(m: int, r: int, v: int, confidence: float = 0.95) -> float:
    """The largest mu whose mu-GDP hypothesis the guesses reject at `confidence` (0 when none): rejection only
    weakens as mu grows, so 50 bisection steps find it. Its epsilon at a delta is gdp_audit.epsilon_from_mu; it
    refutes a claim only under the hypothesis that the mechanism's trade-off curve is Gaussian."""
    if not gdp_rejected(1e-9, m, r, v, confidence):
        return 0.0
    low, high = 1e-9, 1.0
    while gdp_rejected(high, m, r, v, confidence):
        low, high = high, 2 * high
    for _ in range(50):
        mid = (low + high) / 2
        low, high = (mid, high) if gdp_rejected(mid, m, r, v, confidence) else (low, mid)
    return low
