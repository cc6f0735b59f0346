"""The common-ground report (issue 16): the centralized settings' tables and audits (convex model, MLP), the
decentralized client and sample settings' tables (mean +- std over seeds) with the originals each method starts
from, the utility-cost figure and a plain-language summary; a method that does not apply to a setting is listed
with why, never left out silently."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import pandas as pd

from ...evaluate.attacks import protocol as attack_protocol
from ...files import atomic_path
from ...privacy import audit, gdp_audit, one_run
from ...report import claims
from ...report.compare import UNINFORMATIVE, count_tables, read_table, statuses, verdict
from ...report.index import Summary, readable
from ...report.page import Page, select
from ...resolved import check_inputs
from . import config

# the tables the front page counts (a control's canary row, "faulted" or "missed", is no verdict and is not counted)
TABLES = ("centralized", "centralized_mlp", "client", "sample", "canary")
def central_label(result: dict, method: str) -> str:
    """The display label of a centralized result's method: the result's (its runner's declaration), else, for a result
    written before results named theirs, the runner's declaration on either model."""
    if named := result.get("labels", {}).get(method):
        return named
    from ...methods import CENTRAL

    return next((CENTRAL[(method, m)].label for m in ("convex", "mlp") if (method, m) in CENTRAL), method)


def label(result: dict, method: str) -> str:
    """The display label of a decentralized result's method."""
    if named := result.get("labels", {}).get(method):
        return named
    # a result file written before results named their labels: the method's declaration
    from ...methods import METHODS

    return METHODS[method].label if method in METHODS else method


METRICS = ("test_accuracy", "forget_accuracy", "memorisation_gap", "loss_threshold_auc")  # then each attack's


def attacks_of(results: list[dict]) -> dict[str, str]:
    """{attack: label} of the reference-model attacks these decentralized results ran, in their order (the judge's
    `attacks`; a result written before the attack protocol names none: RMIA and LiRA where its rows have them)."""
    found: dict[str, str] = {}
    for r in results:
        named = (r.get("rmia") or {}).get("attacks")
        if named is None:
            rows = [*r["methods"].values(), *r["originals"].values()]
            named = [a for a in ("rmia", "lira") if any(f"{a}_auc" in m for m in rows)]
        found.update({a: attack_protocol.label(a) for a in named})
    return found


def attack_columns(attacks: dict[str, str]) -> list[str]:
    """Each attack's row columns (AUC, TPR at 1 % and at 0.1 % FPR), in the attacks' order."""
    return [c for name in attacks for c in attack_protocol.columns(name)]


# a method "removed" what its original carried at retraining's utility when its mean test accuracy is at most this
# below retraining's (two points); below it, the summary says it removed only by giving up utility
UTILITY_MARGIN = 0.02

# a per-seed memorisation-gap effect (paired over seeds) counts when its mean exceeds this and a one-sided paired
# t-test rejects "none" at 5 % (report/claims.carried_paired): half a point of accuracy
REMOVAL_MARGIN = 0.005


VIOLATED, NOT_FAULTED = audit.VIOLATED, audit.NOT_FAULTED
# an audit row's status (not missing)
AUDITED = f"({VIOLATED}|{NOT_FAULTED}|{UNINFORMATIVE}): (exact|audit|GDP audit|white-box GDP audit)"


def centralized_table(result: dict, timing: dict) -> pd.DataFrame:
    """One row per method: its claimed (epsilon, delta) and sigma, test and canary accuracy of the unlearned and
    retrained runs, gradient evaluations, wall times, and the audit: its lower bound corrected for the table's
    comparisons (Bonferroni over the audited rows that are not controls: each at 1 - alpha / rows), and, where the
    method adds Gaussian noise of a known sigma around noiseless outputs (its noiseless gap is recorded), the exact
    epsilon of that pair.

    Verdicts (an audit never says "holds"): "violated" when the exact epsilon or the corrected bound exceeds the
    claim; "not faulted" when neither does and something here could have faulted it (the exact epsilon, or one of
    the method's positive controls that the audit faults); else "uninformative": the audit showed no power at this
    run count. A positive control (key `<row>@<k>x`: the row's noise set for k times the claim) is "control
    faulted" when its corrected bound exceeds the claim, else "control missed"; controls are not claims and are
    not counted. Records from before the controls (key `<row>@<scale>`, result["control_noise"]: the row at a
    fraction of its sigma, claiming its own certificate's epsilon there) read the same way."""
    audited = {k: m for k, m in result["methods"].items() if "missing" not in m}
    rows_n = max(1, sum("@" not in k and m["claimed_epsilon"] is not None for k, m in audited.items()))
    judged = {k: row_audit(m, result["delta"], rows_n, power="@" not in k) for k, m in audited.items()}
    corrected = {k: j["bound"] for k, j in judged.items()}
    exact = {k: exact_pair_epsilon(m, result["delta"]) if m["claimed_epsilon"] is not None else None
             for k, m in audited.items()}
    labels = {k: row_label(k, m, result) for k, m in result["methods"].items()}
    power: dict[str, list[str]] = {}  # method -> its controls the audit faults
    for k, m in audited.items():
        if "@" in k and corrected[k] > m["claimed_epsilon"]:
            power.setdefault(m["method"], []).append(labels[k])
    rows = []
    seconds = timing.get("seconds", {})
    for key, m in result["methods"].items():
        if "missing" in m:
            rows.append({"method": labels[key], "status": f"missing: {m['missing']}"})
            continue
        a = m["audit"]
        rows.append({
            "method": labels[key], "control_epsilon": control_epsilon(key, m),
            "noiseless_gap": m.get("noiseless_gap"), "sensitivity": m.get("sensitivity"),
            "claimed_epsilon": m["claimed_epsilon"], "delta": result["delta"],
            "sigma": m["sigma"], "test_acc_unlearned": m["test_accuracy"]["unlearned"]["mean"],
            "test_acc_unlearned_std": m["test_accuracy"]["unlearned"]["std"],
            "test_acc_retrained": m["test_accuracy"]["retrained"]["mean"],
            "canary_acc_unlearned": m["canary_accuracy"]["unlearned"],
            "canary_acc_retrained": m["canary_accuracy"]["retrained"],
            "grads_unlearning": m["gradient_evaluations"]["unlearning"],
            "grads_retraining": m["gradient_evaluations"]["retraining"],
            "unlearn_s": seconds.get(f"{key} unlearn", seconds.get(f"{m['method']} unlearn")),
            "retrain_s": seconds.get(f"{key} retrain", seconds.get(f"{m['method']} retrain")),
            "exact_epsilon": exact[key], "audit_epsilon_lower": a["epsilon_lower"],
            "audit_epsilon_corrected": judged[key]["cp_bound"], "audit_epsilon_point": a["epsilon_point"],
            "threshold_epsilon_upper": a["epsilon_upper"], "audit_runs": a["runs_per_side"],
            "audit_fp": a["false_positives"], "audit_fn": a["false_negatives"],
            **{k: v for k, v in judged[key].items() if k not in ("bound", "cp_bound", "name", "runs")},
            "status": (no_certificate_status(m) if m["claimed_epsilon"] is None else
                       control_status(m["claimed_epsilon"], control_epsilon(key, m), corrected[key],
                                      judged[key]["runs"], judged[key]["name"]) if "@" in key else
                       audit_status(m["claimed_epsilon"], exact[key], corrected[key], power.get(m["method"], []),
                                    rows_n, a["confidence"], m.get("noiseless_gap"), judged[key]["name"]))})
    for method, why in result.get("does_not_apply", {}).items():
        rows.append({"method": central_label(result, method), "status": f"does not apply: {why}"})
    return pd.DataFrame(rows)


NO_CERTIFICATE = "no certificate"


def no_certificate_status(m: dict) -> str:
    """A row of a method without a claim (nothing to fault): where the canary's loss stands after unlearning,
    beside retraining and the original, whether the original carried it at all (it predicts the canary's flipped
    label where retraining does not), and whether unlearning pushed it past retraining (a canary that stands out)."""
    loss = m.get("canary_loss")
    if not loss:
        return NO_CERTIFICATE
    text = (f"{NO_CERTIFICATE}: the canary's loss {loss['unlearned']:.3g} after unlearning, {loss['retrained']:.3g} "
            f"retrained, {loss['original']:.3g} in the original")
    if m["original_canary_accuracy"] <= m["canary_accuracy"]["retrained"]:
        text += ("; the original does not carry the canary here (it predicts its flipped label no more often than "
                 "retraining), so this row cannot show forgetting")
    if loss["unlearned"] > 2 * loss["retrained"]:
        text += ("; unlearning pushes it far past retraining's: the canary stands out by its high loss, which the "
                 "audit's one-sided score (a low loss = still learned) does not look for")
    return text


def row_label(key: str, m: dict, result: dict) -> str:
    """A row's name: the method, its rewind, and for a positive control the epsilon its noise was set for."""
    label = central_label(result, m["method"]) + (f" (K/T = {m['rewind']:.3g})" if "rewind" in m else "")
    if "@" not in key:
        return label
    c = m.get("control")
    if c is None:  # a record from before the controls: the row at a fraction of its certified sigma
        return f"{label} (control: sigma x {result['control_noise']:g})"
    return f"{label} (control: epsilon {c['epsilon']:g} = {c['multiple']:g}x the claim, {c['basis']})"


def control_epsilon(key: str, m: dict) -> float | None:
    """The epsilon a positive control's noise was set for (an older record's control: its certificate's claim)."""
    if "@" not in key:
        return None
    return m["control"]["epsilon"] if "control" in m else m["claimed_epsilon"]


def row_audit(m: dict, delta: float, rows: int, power: bool = True) -> dict:
    """Which audit judges a row, at the table's corrected level (1 - alpha / rows), and its bound
    (privacy/gdp_audit.py). A Gaussian pair (the method adds N(0, sigma^2 I) around two noiseless outputs) is judged
    by the parametric bound on its white-box score, exactly Gaussian there. Any other row's parametric bound (on the
    black-box log-odds) faults only where Clopper-Pearson's, valid for any distribution, does too; without a fit,
    Clopper-Pearson alone judges. Each fit's measured separation (`*_mu`, `*_ratio`) and shape check (`*_fit`).
    The power of the judging audit as it runs: `power_as_run` at the judging score's own measured separation (with
    its 95 % range), and, with `power`, `power_2x` / `power_4x` at the separation of a Gaussian mechanism 2x / 4x
    the claim (the best test's), with `runs_for_power_2x` where the first is below POWER_TARGET."""
    a, claim = m["audit"], m["claimed_epsilon"]
    level = 1 - (1 - a["confidence"]) / rows
    cp = audit.epsilon_lower_bound(a["false_positives"], a["false_negatives"], a["runs_per_side"], delta,
                                   level).epsilon_lower
    out = {"cp_bound": cp, "bound": cp, "name": "audit", "runs": a["runs_per_side"], "gdp_epsilon_corrected": None,
           "white_box_epsilon_corrected": None}
    if claim is None:
        out["gdp_fit"] = "none: no claim to audit"
        return out
    fits = {}
    for score in ("gdp", "white_box"):
        fitted = a.get(score)
        if fitted is None:
            continue
        if "missing" in fitted:
            out[f"{score}_fit"] = f"none: {fitted['missing']}"
        elif "mean_diff" not in fitted:
            out[f"{score}_fit"] = "none: written before the audit of all runs (its statistics are the second half's)"
        else:
            fit = fits[score] = gdp_audit.GaussianFit.from_dict(fitted)
            out[f"{score}_epsilon_corrected"] = gdp_audit.epsilon_lower(fit, delta, level).epsilon
            out[f"{score}_mu"], out[f"{score}_ratio"], out[f"{score}_fit"] = fit.mu_point, fit.ratio, fit.check()
    pair = exact_pair_epsilon(m, delta) is not None and "white_box" in fits
    judge, robust = ("white_box", False) if pair else ("gdp", True) if "gdp" in fits else (None, True)
    runs = a["runs_per_side"] + a.get("threshold_runs_per_side", a["runs_per_side"])
    if judge == "white_box":
        out.update(bound=out["white_box_epsilon_corrected"], name="white-box GDP audit", runs=runs)
    elif judge == "gdp":
        out.update(bound=min(out["gdp_epsilon_corrected"], cp), name="GDP audit with Clopper-Pearson agreeing",
                   runs=runs)
    if "control" in m:  # a control's mechanism mu: what a score that is its best test would measure
        out["mechanism_mu"] = gdp_audit.mu_for_epsilon(m["control"]["epsilon"], delta)
    if judge is not None:
        fit = fits[judge]
        se = 1.96 * math.sqrt(2 / fit.runs + fit.mu_point ** 2 / (4 * fit.runs))
        out["power_as_run"], out["power_as_run_low"], out["power_as_run_high"] = (
            _power(abs(fit.mu_point) + k * se, runs, claim, delta, level, fit.ratio, robust) for k in (0, -1, 1))
    if power:
        for k in POWER_MULTIPLES:
            out[f"power_{k:g}x"] = _power(gdp_audit.mu_for_epsilon(k * claim, delta), runs, claim, delta, level,
                                          1.0, robust)
        mu2 = gdp_audit.mu_for_epsilon(POWER_MULTIPLES[0] * claim, delta)
        out["runs_for_power_2x"] = (gdp_audit.runs_for_power(mu2, claim, delta, level, POWER_TARGET)
                                    if out[f"power_{POWER_MULTIPLES[0]:g}x"] < POWER_TARGET and not robust else None)
    return out


@functools.lru_cache(maxsize=None)
def _power(mu: float, runs: int, claim: float, delta: float, level: float, ratio: float, robust: bool) -> float:
    """gdp_audit.power at a separation (0 below 0: a range's low end), once per distinct design."""
    return gdp_audit.power(max(mu, 0.0), runs, claim, delta, level, ratio, robust)


POWER_MULTIPLES = (2.0, 4.0)  # the mechanisms whose faulting the power columns give: 2x and 4x the claim
POWER_TARGET = 0.9             # the 2x power a design should reach (issue 56)


def control_status(claim: float, epsilon: float, bound: float, runs: int, name: str = "audit") -> str:
    """A positive control's line: whether the audit's corrected bound faults the claim of a run whose epsilon is
    known to be `epsilon`."""
    text = f"{name} bound {bound:.3g} vs claimed {claim:g}; this noise's epsilon is {epsilon:.3g}"
    if bound > claim:
        return f"control faulted: {text}: the audit has power at {runs} runs a side"
    return f"control missed: {text}: the audit has no power against it at {runs} runs a side"


def controls_sentence(result: dict) -> str:
    """What the positive controls of a centralized result are, in the report's words."""
    if "controls" not in result:  # a record from before the controls
        return (f"Each method runs again at {result['control_noise']:g} times its certified sigma (this record's "
                "older control: it claims its own certificate's epsilon for that sigma, so the audit could fault it "
                "only where that certificate is loose by less than the audit's reach).")
    if not result["controls"]:
        return "No positive controls ran (common.centralized.controls is empty)."
    times = " and ".join(f"{k:g}x" for k in result["controls"])
    return (f"Positive controls: each row again with its noise set so that its epsilon is {times} the claim "
            "(control_epsilon: exact for the pair where the method noises two fixed outputs, else SGLU's and LU's "
            "accountant's, an upper bound on the true epsilon), the claim tested staying the budget: where the "
            "audit's bound exceeds the claim there (control faulted), it has shown it can fault a certificate at "
            "this run count; where it does not (control missed), it has no power against that epsilon.")


def r2d_calibration_table(result: dict) -> pd.DataFrame:
    """R2D's calibration taken apart (r2d_calibration.py), one row per published rewind: its Delta, Delta with the
    steps actually taken, the measured gaps (as run, with matched minibatches, in Theorem 3.1's full-batch
    constant-step setting), the analytic and classical sigma and the published pair's exact epsilon."""
    cal = result.get("r2d_calibration")
    if not cal:
        return pd.DataFrame()
    def ratio(a: float, b: float) -> float | None:  # none where the bound is 0 (a full rewind: K = T)
        return a / b if b else None

    rows = []
    for key, r in cal["rows"].items():
        m, published = result["methods"][key], r["sensitivity"]
        rows.append({"method": f"R2D (K/T = {r['rewind']:.3g})", "K": r["K"], "T": r["T"], "sensitivity": published,
                     "sensitivity_actual_steps": r["sensitivity_actual_steps"],
                     "actual_over_published": ratio(r["sensitivity_actual_steps"], published), "gap": r["gap"],
                     "gap_over_published": ratio(r["gap"], published), "gap_matched": r["gap_matched"],
                     "matched_over_actual": ratio(r["gap_matched"], r["sensitivity_actual_steps"]),
                     "full_batch_gap": r["full_batch_gap"],
                     "full_batch_over_bound": ratio(r["full_batch_gap"], published),
                     "full_batch_over_bound_needed_G": ratio(r["full_batch_gap"],
                                                             r["full_batch_sensitivity_needed_G"]),
                     "sigma_analytic": m["sigma"], "sigma_classical": r["sigma_classical"],
                     "classical_over_analytic": ratio(r["sigma_classical"], m["sigma"]),
                     "exact_epsilon": exact_pair_epsilon(m, result["delta"])})
    return pd.DataFrame(rows)


def r2d_calibration_sentence(t: pd.DataFrame, result: dict) -> str:
    """What the calibration table shows, in words computed from it (empty without the table)."""
    t = t[t.sensitivity > 0]  # a full rewind (K = T) is retraining: nothing to calibrate
    if t.empty:
        return ""
    cal = result["r2d_calibration"]
    span = lambda col: (f"{t[col].min():.2g}" if f"{t[col].min():.2g}" == f"{t[col].max():.2g}"  # noqa: E731
                        else f"{t[col].min():.2g}-{t[col].max():.2g}")
    over = t.gap_over_published.min() > 1
    G, needed = cal["G"], cal["full_batch_G_needed"]
    if (t.full_batch_over_bound <= 1).all():
        theorem = "not contradicted"
    elif (t.full_batch_over_bound_needed_G <= 1).all():
        theorem = (f"not contradicted: the bound is exceeded with Appendix D's G ({G:.3g}, the largest minibatch "
                   f"gradient), but the full-batch run's gradient difference needs G = {needed:.3g}, and with it "
                   f"the gaps are {span('full_batch_over_bound_needed_G')}x the bound; the estimate fails, not the "
                   "theorem")
    else:
        theorem = (f"exceeded even with the G the full-batch run needs ({needed:.3g} against Appendix D's "
                   f"{G:.3g}; the gaps are then {span('full_batch_over_bound_needed_G')}x the bound), so Appendix "
                   "D's L, estimated at theta_T only, is below what this run needs too; the theorem's true constants "
                   "are unknown here, so this does not contradict it, but its practical constants fail even in its "
                   "own setting")
    return (f"R2D's calibration taken apart: the measured gap between its noiseless unlearned and retrained models is "
            f"{span('gap_over_published')}x the Delta its noise was set for (Theorem 3.1 at the final step size "
            f"{cal['eta_final']:.3g}, Appendix D's L and G)"
            + (", so the practical calibration under-states the sensitivity on this task" if over else "")
            + f". With the step sizes the run actually took (up to {cal['eta_max']:.3g}) Delta is "
            f"{span('actual_over_published')}x larger, and with matched minibatches (the canary simply dropped from "
            f"its batch) the gaps are {span('matched_over_actual')}x that. In Theorem 3.1's own setting (full-batch "
            f"GD at the constant final step size, {cal['steps']} steps, the same MLP, initialisation, L and G) the "
            f"gaps are {span('full_batch_over_bound')}x its bound: Theorem 3.1 is {theorem}. The exact epsilon of "
            f"the published pairs: {', '.join(f'{v:.3g}' for v in t.exact_epsilon)} against the claimed "
            f"{result['epsilon']:g}. The paper's classical sigma (eq. 3) is {span('classical_over_analytic')}x the "
            "analytic one the rows use.")


def exact_pair_epsilon(m: dict, delta: float) -> float | None:
    """The exact epsilon of the audited pair where the method adds N(0, sigma^2 I) around deterministic
    (noiseless) unlearned and retrained outputs whose distance was measured (`noiseless_gap`); None otherwise."""
    gap, sigma = m.get("noiseless_gap"), m.get("sigma")
    if gap is None or sigma is None:
        return None
    if sigma == 0:
        return 0.0 if gap == 0 else math.inf
    return audit.exact_epsilon(gap, sigma, delta)


def audit_status(claim: float, exact: float | None, bound: float, power: list[str], rows: int,
                 confidence: float, gap: float | None = None, name: str = "audit") -> str:
    """The audit's verdict on one row (centralized_table's docstring), with its numbers. A row whose noiseless
    output is retraining's (`gap` 0, e.g. R2D rewinding everything) has exact epsilon 0 by construction: nothing here
    could fault it, so it is uninformative, not "not faulted" (issue 56)."""
    level = f"{100 * (1 - (1 - confidence) / rows):.4g} % each over {rows} rows"
    parts = ([f"exact epsilon of this pair {exact:.3g}"] if exact is not None else []) + [
        f"{name} bound {bound:.3g} ({level})"]
    text = "; ".join(parts) + f" vs claimed {claim:g}"
    if (exact is not None and exact > claim) or bound > claim:
        return f"{VIOLATED}: {text}"
    if gap == 0:
        return (f"{UNINFORMATIVE}: {text}; its noiseless output is retraining's (gap 0), so the exact epsilon is 0 by "
                "construction and nothing here could fault it")
    if exact is not None or power:
        why = "" if exact is not None else f" (the audit faults this method's positive controls: {', '.join(power)})"
        return f"{NOT_FAULTED}: {text}{why}"
    return (f"{UNINFORMATIVE}: {text}; no exact epsilon for this mechanism and the audit faults none of its positive "
            "controls, so it has shown no power at this run count")


NO_AUDIT = "missing: this result was written before the decentralized settings' audit (its job re-run adds it)"


def _seed_rows(results: list[dict], metrics: list[str]) -> pd.DataFrame:
    """One row per (setting, seed, method or original) with every metric and cost."""
    rows = []
    for r in results:
        for group in ("originals", "methods"):
            for key, m in r[group].items():
                claim = m.get("claimed", {})
                rows.append({"setting": r["setting"], "seed": r["seed"], "group": group, "key": key,
                             "label": label(r, key), "trained_by": m["trained_by"],
                             **{k: m[k] for k in metrics if k in m},
                             "memorisation_gap": m["forget_accuracy"] - m["test_accuracy"],
                             "top_class_shares": m.get("top_class_shares"),
                             "gradient_evaluations": m["gradient_evaluations"], "bytes_read": m.get("bytes_read"),
                             "communication_floats": m["communication_floats"],
                             "claimed_epsilon": claim.get("epsilon"), "claim": claim.get("basis"),
                             "audit": m.get("audit", {}).get("status", NO_AUDIT),
                             "audit_exact_epsilon": m.get("audit", {}).get("exact_epsilon")})
    return pd.DataFrame(rows)


def _mean_std(rows: pd.DataFrame, keys: list[str], metrics: list[str]) -> pd.DataFrame:
    """Seed mean and std (ddof 0) of every metric, per `keys`; costs and claims from the first seed."""
    out = []
    for _, g in rows.groupby(keys, sort=False):
        first = g.iloc[0]
        row = {k: first[k] for k in keys}
        row["seeds"] = len(g)
        for k in (k for k in metrics if k in g):  # a result from before an attack lacks its columns
            row[k], row[f"{k}_std"] = float(g[k].mean()), float(g[k].std(ddof=0))
        for k in ("gradient_evaluations", "bytes_read", "communication_floats"):
            row[k] = float(g[k].mean()) if g[k].notna().all() else None
        row["label"], row["trained_by"], row["claimed_epsilon"], row["claim"] = \
            first["label"], first["trained_by"], first["claimed_epsilon"], first["claim"]
        exact = g.audit_exact_epsilon.dropna()  # the audit: the seed with the largest exact epsilon speaks
        row["audit"] = g.audit.loc[exact.astype(float).idxmax()] if len(exact) else first["audit"]
        if len(g) > 1 and len(exact) and str(row["audit"]).startswith((VIOLATED, NOT_FAULTED)):
            row["audit"] += f" (the largest over {len(g)} seeds)"
        out.append(row)
    return pd.DataFrame(out)


def one_class(shares: list[list[float] | None], what: str) -> str | None:
    """Why a memorisation gap cannot be read, else None: some of the judged models (`shares`: per seed, each model's
    share of test predictions in its most predicted class, the judge's `top_class_shares`) predict one class
    (report/claims.not_one_class). Such a model's forget and test accuracy are both near chance, so its gap is near
    zero whether or not it forgot: a mean over it reads as removal. Standards: no one-class model counts."""
    judged = [s for seed in shares if seed is not None for s in seed]
    bad = [s for s in judged if not claims.not_one_class(s, what).ok]
    if not bad:
        return None
    return (f"{len(bad)} of {what} {len(judged)} models (all seeds) predict one class "
            f"({claims.not_one_class(max(bad), 'the worst').what}), so the mean gap reads as removal whether or not "
            "the forget set was forgotten")


ONE_CLASS_NOT_CHECKED = ("one-class check: not in this result (written before the judge kept each model's top-class "
                         "share; its job re-run adds it)")


def with_one_class_checks(results: list[dict], checks: list[str]) -> list[str]:
    """Each check's top-class shares (parts.one_class_check: the method re-run on the run's stored originals) put
    into the results of its (setting, method) that lack them, seed by seed; what was filled, in words. A check of a
    result that has its own shares, or of a seed or method the results do not hold, is refused."""
    notes = []
    for path in checks:
        check = json.loads(Path(path).read_text())
        setting, method = check["setting"], check["method"]
        for seed, part in check["seeds"].items():
            r = next((r for r in results if r["setting"] == setting and str(r["seed"]) == seed), None)
            if r is None or method not in r["methods"]:
                raise ValueError(f"--one-class {path}: no {setting} result of {method!r} at seed {seed} among "
                                 "--decentralized; valid: a check of a method and seed those results hold")
            if r["methods"][method].get("top_class_shares") is not None:
                raise ValueError(f"--one-class {path}: the {setting} result of {method!r} at seed {seed} has its "
                                 "own top-class shares; a check is for a result that predates them")
            r["methods"][method]["top_class_shares"] = part["top_class_shares"]
        notes.append(f"{label(r, method)} ({setting}, seeds {', '.join(check['seeds'])}): top-class shares from "
                     f"`{Path(path).name}`, the method re-run on the run's stored originals (its results predate them)")
    return notes


def removal_status(gap: list[float], own_original_gap: list[float], retrain_gap: list[float],
                   margin: float = REMOVAL_MARGIN, shares: list[list[float] | None] | None = None,
                   original_shares: list[list[float] | None] | None = None) -> str:
    """What the forget set's memorisation gap (forget minus test accuracy) says, each argument one value per seed
    (paired): "uninformative" when a model judged, the method's or its original's, predicts one class (`one_class`;
    `shares`, `original_shares`: per seed, each model's top-class share, None where the result predates them);
    "uninformative" unless the method's original carried the forget set (its gap above retraining's); then
    "removed" when the method is measurably below its original and not measurably above retraining, "kept" when
    the reverse, "partly removed" when both, "uninformative" when neither is measurable. Measurable: the mean
    paired difference exceeds `margin` and a one-sided paired t-test rejects no difference at 5 %."""
    diff = lambda a, b: [x - y for x, y in zip(a, b, strict=True)]  # noqa: E731
    mean = lambda xs: sum(xs) / len(xs)  # noqa: E731
    numbers = (f"gap {mean(gap):.3f}; its original {mean(own_original_gap):.3f}, retraining {mean(retrain_gap):.3f}; "
               f"{len(gap)} seed{'s' * (len(gap) > 1)}")
    checked = [s for s in (shares, original_shares) if s is not None and all(x is not None for x in s)]
    for what, part in (("the method's", shares), ("its original's", original_shares)):
        why = one_class(part or [], what)
        if why:
            return f"{UNINFORMATIVE}: {why} ({numbers})"
    if len(checked) < 2:
        numbers += f"; {ONE_CLASS_NOT_CHECKED}"
    carried = claims.carried_paired(diff(own_original_gap, retrain_gap), margin, "original minus retraining")
    if not carried.ok:
        return f"{UNINFORMATIVE}: its original carried nothing measurable ({numbers}; {carried.what})"
    removed = claims.carried_paired(diff(own_original_gap, gap), margin, "original minus method").ok
    kept = claims.carried_paired(diff(gap, retrain_gap), margin, "method minus retraining").ok
    if removed == kept:
        return (f"partly removed: {numbers}" if removed else
                f"{UNINFORMATIVE}: neither the removal nor what is left is measurable ({numbers})")
    return ("removed" if removed else "kept") + f": {numbers}"


def _per_seed(rows: pd.DataFrame, group: str, key: str, column: str = "memorisation_gap") -> list:
    """One setting's `column` of a method or an original (`group`, `key`), one value per seed in seed order."""
    return rows[(rows.group == group) & (rows.key == key)].sort_values("seed")[column].tolist()


def decentralized_tables(results: list[dict], timings: dict) -> tuple[dict[str, pd.DataFrame], pd.DataFrame]:
    """Per setting, one row per method (seed mean and std) with its status; and the originals table."""
    metrics = [*METRICS, *attack_columns(attacks_of(results))]
    rows = _seed_rows(results, metrics)
    rows = rows.sort_values("group", kind="stable")  # methods and originals each in the jobs' order
    originals = _mean_std(rows[rows.group == "originals"], ["setting", "key"], metrics)
    methods = _mean_std(rows[rows.group == "methods"], ["setting", "key"], metrics)
    tables = {}
    for setting in ("client", "sample"):
        part = methods[methods.setting == setting].copy()
        if part.empty:
            tables[setting] = part
            continue
        per_seed = rows[rows.setting == setting]
        retrain_gap = _per_seed(per_seed, "methods", "retrain") or None
        part["method"] = list(part.label)
        part["unlearn_s"] = [timings.get(setting, {}).get(k) for k in part.key]
        part["status"] = [
            "reference: exact retraining" if k == "retrain" else
            "missing: no retraining to compare with" if retrain_gap is None else
            removal_status(_per_seed(per_seed, "methods", k), _per_seed(per_seed, "originals", tb), retrain_gap,
                           shares=_per_seed(per_seed, "methods", k, "top_class_shares"),
                           original_shares=_per_seed(per_seed, "originals", tb, "top_class_shares"))
            for k, tb in zip(part.key, part.trained_by)]
        r0 = next(r for r in results if r["setting"] == setting)
        extra = [{"setting": setting, "method": label(r0, m), "status": f"does not apply: {why}"}
                  for m, why in r0["does_not_apply"].items()]
        tables[setting] = pd.concat([part, pd.DataFrame(extra)], ignore_index=True)
    return tables, originals


def _mean_seconds(timing_files: list[dict]) -> dict:
    """{setting: {method: mean unlearning seconds over seeds}}."""
    out: dict = {}
    for t in timing_files:
        for k, v in t["seconds"].items():
            out.setdefault(t["setting"], {}).setdefault(k, []).append(v)
    return {s: {k: sum(v) / len(v) for k, v in d.items()} for s, d in out.items()}


def _claim_order(label: str) -> tuple:
    """exact first, then certified by epsilon, then none: the same colour for the same claim in every panel."""
    if label == "exact (0)":
        return (0, 0.0)
    if label == "none":
        return (2, 0.0)
    return (1, float(label.split("(")[1].rstrip(")")))


def utility_cost_figure(tables: dict[str, pd.DataFrame], centralized: dict[str, pd.DataFrame], path: Path) -> None:
    """Test accuracy against per-sample gradient evaluations of unlearning (symlog: several methods spend none),
    one panel per setting, coloured by claimed epsilon (exact, certified, none)."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    from ...report import style

    style.apply()
    judged = f"(reference|removed|kept|partly removed|{UNINFORMATIVE})"
    panels = [(f"decentralized {s} removal", t[t.status.str.match(judged)]) for s, t in tables.items() if not t.empty]
    for title, c in centralized.items():
        if "status" not in c or "test_acc_unlearned" not in c:
            continue
        c = c[c.status.str.match(AUDITED) & ~c.method.str.contains("control")]
        panels.append((title, c.rename(columns={"test_acc_unlearned": "test_accuracy",
                                                "grads_unlearning": "gradient_evaluations"})))
    cols = min(2, max(len(panels), 1))  # two panels a row, so that each is legible on a page
    rows = max(1, -(-len(panels) // cols))
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 4.8 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.axis("off")
    for ax, (title, t) in zip(axes.flat, panels):
        claim = ["none" if pd.isna(e) else ("exact (0)" if e == 0 else f"certified ({e:g})")
                 for e in t.claimed_epsilon]
        colours = sns.color_palette()  # the same colour for the same kind of claim in every panel
        palette = {c: colours[_claim_order(c)[0]] for c in claim}
        sns.scatterplot(x=t.gradient_evaluations.astype(float), y=t.test_accuracy.astype(float), hue=claim,
                        hue_order=sorted(set(claim), key=_claim_order), palette=palette, s=60, ax=ax)
        for _, r in t.iterrows():
            where = (float(r["gradient_evaluations"]), float(r["test_accuracy"]))
            ax.annotate(r["method"].replace("K/T = ", ""), where, fontsize=8,
                        xytext=(3, 3), textcoords="offset points")
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlim(-0.3, 10 * max(1.0, float(t.gradient_evaluations.max())))
        ax.set(title=title, xlabel="per-sample gradient evaluations of unlearning", ylabel="test accuracy")
        ax.legend(title="claimed epsilon", fontsize=7)
    style.save(fig, path)


def dec_views(attacks: list[str]) -> tuple:
    """The page's views of a decentralized table, by what each answers (the CSV file keeps every column);
    `attacks`: their columns (attack_columns)."""
    return (("Utility and removal", ["method", "seeds", "test_accuracy", "test_accuracy_std", "forget_accuracy",
                                     "forget_accuracy_std", "memorisation_gap", "status"]),
            ("Attacks", ["method", "loss_threshold_auc", *attacks]),
            ("Certificate and audit", ["method", "claimed_epsilon", "audit"]),
            ("Cost", ["method", "gradient_evaluations", "bytes_read", "communication_floats", "unlearn_s"]))
# long verdicts: the table shows their first words, a note the rest
TEXT_COLUMNS = ("status", "audit", "gdp_fit", "white_box_fit")
# the centralized tables' views (the convex and the MLP one)
CENTRAL_VIEWS = (("Certificate and utility", ["method", "control_epsilon", "claimed_epsilon", "sigma", "sensitivity",
                                              "noiseless_gap", "test_acc_unlearned", "test_acc_retrained",
                                              "canary_acc_unlearned", "canary_acc_retrained"]),
                 ("Audit", ["method", "exact_epsilon", "audit_epsilon_lower", "audit_epsilon_corrected",
                            "audit_epsilon_point", "threshold_epsilon_upper", "white_box_epsilon_corrected",
                            "gdp_epsilon_corrected", "audit_runs", "status"]),
                 ("The judging audit's power: as run (this row's measured separation) and at 2x / 4x the claim",
                  ["method", "power_as_run", "power_as_run_low", "power_as_run_high", "power_2x", "power_4x",
                   "runs_for_power_2x", "white_box_mu", "gdp_mu", "mechanism_mu", "white_box_fit", "gdp_fit"]),
                 ("Cost", ["method", "grads_unlearning", "grads_retraining", "unlearn_s", "retrain_s"]))
def original_views(attacks: list[str]) -> tuple:
    return (("Utility and memorisation", ["key", "setting", "trained_by", "seeds", "test_accuracy", "forget_accuracy",
                                          "memorisation_gap", "memorisation_gap_std"]),
            ("Attacks", ["key", "setting", "loss_threshold_auc", *attacks]),
            ("Cost", ["key", "setting", "gradient_evaluations", "communication_floats"]))


def short_verdict(text) -> str:
    """A verdict's words before its first colon ("kept: gap 0.083; ..." -> "kept"), for a table cell."""
    return text.split(":", 1)[0] if isinstance(text, str) else text


def table_views(page: Page, table: pd.DataFrame, views, key: str = "method", status: str = "verdict") -> None:
    """A wide table as a reader sees it: one narrow table per question (`views`: (title, columns)), display names
    for the headers, each long verdict (TEXT_COLUMNS) cut to its first words with the whole text in a note under its
    table. Rows that do not apply are shown in the first view only."""
    applies = (table[~table.status.astype(str).str.startswith("does not apply")] if "status" in table else table)
    for i, (title, columns) in enumerate(views):
        view = select(table if i == 0 else applies, columns)  # "does not apply" said once, in the first view
        if len(view.columns) <= 1:
            continue
        texts = [c for c in TEXT_COLUMNS if c in view]
        page.text(f"**{title}**")
        names = {**readable(), "status": status}
        page.table(view.assign(**{c: view[c].map(short_verdict) for c in texts}).rename(columns=names))
        notes = [f"- {row[key]} ({names.get(c, c)}): {row[c]}" for c in texts for _, row in view.iterrows()
                 if isinstance(row[c], str) and ":" in row[c]]
        if notes:
            page.bullets(notes)


def decentralized_views(page: Page, table: pd.DataFrame, attacks: list[str]) -> None:
    """A decentralized table, one view per question (dec_views)."""
    table_views(page, table, dec_views(attacks), status="removal")


def dec_columns(attacks: list[str]) -> list[str]:
    """A decentralized table's CSV columns."""
    return ["method", "seeds", "test_accuracy", "test_accuracy_std", "forget_accuracy", "forget_accuracy_std",
            "memorisation_gap", "loss_threshold_auc", *attacks, "gradient_evaluations", "bytes_read",
            "communication_floats", "claimed_epsilon", "unlearn_s", "status", "audit"]


CANARY_COLUMNS = ["method", "canaries", "guesses", "correct", "epsilon_lower", "gdp_epsilon_lower",
                  "refutable_epsilon", "ceiling", "level", "power_2x", "status"]


def canary_rows(runs: list[dict]) -> int:
    """How many canary audits judge a claim (over both settings): the Bonferroni correction's count."""
    return max(1, sum("refutable_epsilon" in r for r in runs))


def canary_table(runs: list[dict], setting: str, rows_n: int) -> pd.DataFrame:
    """The setting's canary audits (canary.py), each method beside its control (its original, nothing removed),
    bounded at 1 - alpha / rows_n (Bonferroni over the canary rows of both settings)."""
    rows = []
    for r in (r for r in runs if r["setting"] == setting):
        if "refutable_epsilon" not in r:
            rows.append({"method": r["label"], "status": r["status"]})
            continue
        if r.get("models_read") != 1:
            rows.append({"method": r["label"], "canaries": r["canaries"], "guesses": r["guesses"],
                         "correct": r["correct"], "status": (
                             "not testable: written when the score averaged the remaining clients' models, their "
                             "joint release, which the per-model claim does not cover (issue 68); re-run the canary "
                             "audit (one model's score per seed)")})
            continue
        level = 1 - (1 - r["confidence"]) / rows_n
        m, g, refutable, dn = r["canaries"], r["guesses"], r["refutable_epsilon"], r["delta_null"]
        bound, control = (one_run.epsilon_lower_bound(m, g, v, dn, level) for v in (r["correct"], r["control_correct"]))
        f_dp = {v: gdp_audit.epsilon_from_mu(one_run.gdp_mu_lower_bound(m, g, v, level), dn)
                for v in (r["correct"], r["control_correct"])}
        ceiling = one_run.epsilon_lower_bound(m, g, g, dn, level)
        common = {"canaries": m, "guesses": g, "refutable_epsilon": refutable, "ceiling": ceiling,
                  "level": level}
        c2 = r.get("control_2x")
        positive = None if c2 is None else one_run.epsilon_lower_bound(m, g, c2["correct"], dn, level)
        rows.append({"method": r["label"], **common, "correct": r["correct"], "epsilon_lower": bound,
                     "gdp_epsilon_lower": f_dp[r["correct"]],
                     "power_2x": one_run.power(m, g, 2 * refutable, refutable, dn, level),
                     "status": canary_verdict(bound, ceiling, refutable, control, rows_n, positive)})
        rows.append({"method": f"{r['label']}: its original (control)", **common, "correct": r["control_correct"],
                     "epsilon_lower": control, "gdp_epsilon_lower": f_dp[r["control_correct"]],
                     "status": canary_control_verdict(control, refutable)})
        if c2 is not None:
            rows.append({"method": f"{r['label']}: 2x control",
                         **common, "correct": c2["correct"], "epsilon_lower": positive,
                         "status": canary_control_verdict(positive, refutable)})
    return select(pd.DataFrame(rows), CANARY_COLUMNS)


def canary_verdict(bound: float, ceiling: float, refutable: float, control: float, rows: int,
                   positive: float | None) -> str:
    """The canary audit's words: "violated" above 2 epsilon; "not faulted" only beside both controls faulted (the
    original, and the positive control at twice 2 epsilon: None where the result predates it); else "uninformative",
    with why."""
    text = f"canary audit: epsilon >= {bound:.3g} vs {refutable:.3g} (twice the claim; corrected over {rows} rows)"
    if bound > refutable:
        return f"{VIOLATED}: {text}"
    if ceiling <= refutable:
        return (f"{UNINFORMATIVE}: {text}; these guesses cannot show more than {ceiling:.3g} even all right (more "
                "canaries would)")
    if control <= refutable:
        return (f"{UNINFORMATIVE}: {text}; its control (the original, nothing removed) is not faulted either "
                f"(epsilon >= {control:.3g}): no power here")
    if positive is None:
        return (f"{UNINFORMATIVE}: {text}; written before the positive control at twice {refutable:.3g}: its power "
                "near the claim was not run (re-run the canary audit)")
    if positive <= refutable:
        return (f"{UNINFORMATIVE}: {text}; its positive control at twice {refutable:.3g} is not faulted either "
                f"(epsilon >= {positive:.3g}): no power near the claim")
    return (f"{NOT_FAULTED}: {text}; its controls are faulted (the original: epsilon >= {control:.3g}; twice "
            f"{refutable:.3g}: epsilon >= {positive:.3g})")


def canary_control_verdict(bound: float, refutable: float) -> str:
    """The control's words: whether the audit faults the original (the power the method's row needs)."""
    text = f"epsilon >= {bound:.3g} vs {refutable:.3g}"
    return f"faulted: {text}: the audit has power" if bound > refutable else f"missed: {text}: no power here"


CANARY_TEXT = (
    "The canary audit (Steinke, Nasr and Jagielski 2023: one training run, `canary.py`): per seed, canaries drawn "
    "from the forget set, each trained with a wrong label with probability 1/2; the method removes the forget set, "
    "and the auditor guesses, from one released model (the first remaining client's: a certificate speaks of one "
    "model, and a score averaging several reads their joint release), which canaries carried a wrong label (the "
    "highest and lowest scores of each seed, fixed in advance), pooled over the seeds. A certificate for removing "
    "the whole forget set bounds what this can show by twice its epsilon (through retraining, which does not "
    "depend on the canaries), so the bound is compared with that, at the level `level` (Bonferroni over the canary "
    "rows of both settings). Its control scores the original: where the audit cannot fault the original, it has no "
    "power, and the method's row says so. gdp_epsilon_lower: beside it, the bound from the hypothesized f-DP curve "
    "(Mahloujifar, Melis and Chaudhuri 2025: the largest mu whose mu-GDP the same guesses reject at the same level, "
    "its epsilon at the same delta), tighter where the mechanism is Gaussian but a refutation of the claim only "
    "under that hypothesis, so it judges nothing. power_2x: the probability that this design (these canaries and "
    "guesses, this level) faults a mechanism exactly twice the refutable epsilon in each canary seen through its "
    "best test (randomized response); the positive control (\"2x control\") is one such mechanism, run: randomized "
    "response on the same canaries' inclusions at twice the refutable epsilon (a synthetic release, not a trained "
    "model), guessed, pooled and bounded as the method is. A method's \"not faulted\" needs both controls faulted. "
    "ceiling: the most these guesses can show, all of them right.")


def convex_description(result: dict) -> list[str]:
    """The convex canary setting's two paragraphs: what the audit computes and what ran."""
    return [
        "An auditor checks each certificate: it sees the models of many independent runs of the method and of "
        "retraining, and from how well a threshold on the canary's loss tells them apart it computes a lower bound "
        "on the epsilon the runs need (Clopper-Pearson, threshold chosen on the first half of the runs, counted on "
        "the second). A lower bound above the claimed epsilon would be a finding: the certificate is wrong or its "
        "assumptions fail.",
        f"SGLU's task: L2-regularised logistic regression on {result['dataset']} binary features (the `sglu` "
        f"section's pair and constants), n = {result['n']}, d = {result['d']}. The forget set is one canary, the "
        "last training point with its label flipped; removing it replaces it by SGLU's random replacement point. "
        f"{result['trials']} runs a side per method. canary_acc: the share of runs whose model predicts the "
        "canary's flipped label (how often it was memorised). Gradient evaluations are per-sample gradients. "
        + controls_sentence(result) + " exact_epsilon: where the method adds Gaussian noise of a known sigma around "
        "noiseless outputs, the exact epsilon of the audited pair (its measured noiseless gap as "
        "the sensitivity; Balle & Wang 2018, Theorem 8), which the audit's bound can only approach. "
        "audit_epsilon_corrected: the bound with a Bonferroni correction over the table's audited rows that are not "
        "controls (each control at the same level); "
        "threshold_epsilon_upper bounds the epsilon this threshold's rates imply, not the mechanism's. "
        "white_box_epsilon_corrected and gdp_epsilon_corrected: the parametric audit's bound at the same level "
        "(privacy/gdp_audit.py, after Nasr et al. 2023's GDP audit; from all runs, both tails: the larger of a bound "
        "from the two sides' mean difference and one from their spread, each at alpha / 2) on two scores: the "
        "white-box score projects each released model on the direction between the two noiseless outputs (exactly "
        "Gaussian where the method adds Gaussian noise around them: that bound judges such a row, a Gaussian pair), "
        "the black-box one is the canary's log-odds (the attacker's view, beside it). A row that is not a Gaussian "
        "pair (a noisy chain, an accountant's epsilon) is faulted only where Clopper-Pearson's bound, valid for any "
        "distribution, agrees, since a Gaussian fit of 500 runs cannot check the tail that epsilon at this delta "
        "reads. power_as_run: the probability that the judging audit as run (these runs, this correction, the "
        "agreement rule) faults the claim when the judging score's two sides are as far apart as measured here "
        "(Gaussian, with its 95 % range from the measurement's error); power_2x / power_4x: the same at the "
        "separation of a Gaussian mechanism 2x / 4x the claim seen through its best test (simulated audits); "
        "runs_for_power_2x: the runs a side the parametric audit needs to reach 0.9 at 2x, where these fall short. "
        "white_box_mu and gdp_mu: how many pooled standard deviations apart each score puts the two sides; "
        "mechanism_mu, for a control, how many the mechanism's best test does; a black-box score far short of it "
        "sees little of the two outputs' gap. Verdicts: "
        "violated (the exact epsilon or the corrected bound above the claim), not faulted (neither, with the exact "
        "epsilon or an audit that faults one of the method's controls), uninformative (neither: the audit has shown no "
        "power; or the noiseless output is retraining's, gap 0, so the exact epsilon is 0 by construction)."]


def mlp_description(mlp_result: dict) -> str:
    """The MLP canary setting's paragraph."""
    return (
        f"The same canary task with R2D's smooth MLP (SmeLU; widths {mlp_result['widths']}), "
        f"{mlp_result['trials']} runs a side, removal by deletion. R2D trains by its own recipe (minibatch SGD, "
        "decaying step) and estimates L and G as its Appendix D does; HF and CNS at the convex setting's settings. "
        "sensitivity: the certificate's bound on the distance between the noiseless unlearned and retrained models; "
        "noiseless_gap: that distance as measured. A gap above the bound means the certificate's premise fails here, "
        "and the audit then faults it. " + controls_sentence(mlp_result))


def write_report(params: dict, centralized: str | None, timing: str | None, mlp: str | None, mlp_timing: str | None,
                 decentralized: list[str], decentralized_timings: list[str], missing: dict[str, str],
                 out_dir: str, references: str | None = None, canary: list[str] | None = None,
                 one_class: list[str] | None = None) -> None:
    """The report; `missing` holds {setting: reason} for a setting that could not run (its data absent);
    `references` the reference-count study (decentralized.reference_study), where it ran; `canary` the canary
    audits (canary.py); `one_class` one-class checks (parts.one_class_check) for results that predate the shares."""
    if centralized is None and "centralized" not in missing:
        raise ValueError("common-report: give --centralized and --timing, or --missing centralized=<reason>")
    if not decentralized and "decentralized" not in missing:
        raise ValueError("common-report: give --decentralized (and --decentralized-timings), or --missing "
                         "decentralized=<reason>")
    header = check_inputs(params, [f for f in (centralized, mlp) if f] + list(decentralized))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if centralized:
        result = json.loads(Path(centralized).read_text())
        table = centralized_table(result, json.loads(Path(timing).read_text()))
    else:  # nothing ran: the page says why (no run to describe)
        table = pd.DataFrame([{"method": m, "status": f"missing: {missing['centralized']}"}
                              for m in config(params)["centralized"]["methods"]])
    if mlp:
        mlp_result = json.loads(Path(mlp).read_text())
        mlp_table = centralized_table(mlp_result, json.loads(Path(mlp_timing).read_text()))
    else:
        mlp_result = {}
        mlp_table = pd.DataFrame([{"method": "all", "status": f"missing: {missing.get('centralized', 'not run')}"}])
    dec_results = [json.loads(Path(f).read_text()) for f in decentralized]
    checked = with_one_class_checks(dec_results, one_class or [])
    attacks = attack_columns(attacks_of(dec_results))
    if dec_results:
        seconds = _mean_seconds([json.loads(Path(f).read_text()) for f in decentralized_timings])
        dec_tables, originals = decentralized_tables(dec_results, seconds)
    else:
        dec_tables = {s: pd.DataFrame([{"method": "all", "status": f"missing: {missing['decentralized']}"}])
                      for s in ("client", "sample")}
        originals = pd.DataFrame()
    timed = [c for c in ("unlearn_s", "retrain_s") if c in table]  # wall times vary: their own file
    with atomic_path(out / "centralized.csv") as tmp:
        table.drop(columns=timed).to_csv(tmp, index=False, float_format="%.6g")
    calibration = r2d_calibration_table(mlp_result)
    with atomic_path(out / "r2d_calibration.csv") as tmp:
        calibration.to_csv(tmp, index=False, float_format="%.6g")
    mlp_timed = [c for c in ("unlearn_s", "retrain_s") if c in mlp_table]
    with atomic_path(out / "centralized_mlp.csv") as tmp:
        mlp_table.drop(columns=mlp_timed).to_csv(tmp, index=False, float_format="%.6g")
    timing_rows = [table[["method", *timed]].assign(setting="centralized"),
                   mlp_table[["method", *mlp_timed]].assign(setting="centralized_mlp")]
    for setting, t in dec_tables.items():
        with atomic_path(out / f"{setting}.csv") as tmp:
            select(t, [c for c in dec_columns(attacks) if c != "unlearn_s"]).to_csv(tmp, index=False,
                                                                                     float_format="%.6g")
        if "unlearn_s" in t:
            timing_rows.append(t[["method", "unlearn_s"]].assign(setting=setting))
    with atomic_path(out / "originals.csv") as tmp:
        originals.to_csv(tmp, index=False, float_format="%.6g")
    canary_runs = [json.loads(Path(f).read_text()) for f in canary or []]
    canary_tables = {s: canary_table(canary_runs, s, canary_rows(canary_runs)) for s in ("client", "sample")}
    with atomic_path(out / "canary.csv") as tmp:
        pd.concat([t.assign(setting=s) for s, t in canary_tables.items()], ignore_index=True).to_csv(
            tmp, index=False, float_format="%.6g")
    study = json.loads(Path(references).read_text()) if references else None
    ref_table = pd.DataFrame(study["rows"]) if study else pd.DataFrame()
    if not ref_table.empty:  # the count first; RMIA's offline a only where the attack ran offline (online: none)
        ref_table = ref_table[["reference_models", *(c for c in ref_table if c != "reference_models")]]
        ref_table = ref_table.dropna(axis=1, how="all")
    if study:
        with atomic_path(out / "references.csv") as tmp:
            ref_table.to_csv(tmp, index=False, float_format="%.6g")
    with atomic_path(out / "timing.csv") as tmp:
        pd.concat(timing_rows, ignore_index=True).to_csv(tmp, index=False, float_format="%.6g")
    utility_cost_figure({s: t for s, t in dec_tables.items() if "gradient_evaluations" in t},
                        {"centralized, convex": table, "centralized, MLP": mlp_table}, out / "utility_cost.png")

    budget = config(params)["budget"]
    page = Page(f"Common ground: every method on one task, with an audit of every certificate (scale "
                f"`{params['scale']}`)")
    page.text(header)
    page.text(
        "Each paper evaluates its method on its own data, model, budget and attack; here the methods share one "
        f"task per setting and one budget (epsilon {budget['epsilon']:g}, delta {budget['delta']:g}, each "
        "method's noise from its own certificate where it has one).")
    page.heading("Summary")
    lines = plain_summary(dec_tables, {"convex": table, "MLP": mlp_table})
    if not calibration.empty:
        lines.append(f"- centralized, MLP: {r2d_calibration_sentence(calibration, mlp_result)}")
    page.bullets(lines)
    with atomic_path(out / "summary.json") as tmp:  # the front page's common-ground section reads it
        tmp.write_text(json.dumps({"summary": lines}, indent=2) + "\n")
    page.figure("utility_cost.png", "test accuracy against the gradient evaluations of unlearning, by claimed epsilon")
    for setting, title in (("client", "Decentralized client removal"), ("sample", "Decentralized sample removal")):
        page.heading(title)
        page.text(DEC_TEXT[setting])
        page.text(rmia_sentence([r for r in dec_results if r["setting"] == setting]))
        if notes := [n for n in checked if f"({setting}," in n]:
            page.text("One-class checks: " + "; ".join(notes) + ".")
        decentralized_views(page, dec_tables[setting], attacks)
        if not canary_tables[setting].empty:
            table_views(page, canary_tables[setting], (("Canary audit", CANARY_COLUMNS),), status="canary audit")
            page.text(CANARY_TEXT)
    if not originals.empty:
        page.heading("What each method's original carried")
        page.text(
            "Every trained state a method starts from, judged like the methods (the remaining clients' models). "
            "Its memorisation gap (forget minus test accuracy) and the attacks against it are what its methods had to "
            "remove; retraining's row above is the level of a model that never saw the forget set.")
        table_views(page, originals, original_views(attacks), key="key")
    if study:
        page.heading("How many reference models an attack needs")
        page.text(
            f"{' and '.join(map(attack_protocol.label, study['attack'].get('attacks', []))) or 'The attacks'} against "
            "the D-SGD original "
            f"({study['setting']} setting, seed {study['seed']}, the mean "
            f"over its {study['models']} remaining clients' models), each with the first k of "
            f"{study['attack']['reference_models']} references trained once ({study['attack']['references']}; "
            "complementary pairs, so the first k are what a run with k references trains). Members: the forget set; "
            "non-members: held-out test samples. An AUC near 0.5 and a TPR near 1 % at 1 % FPR are chance.")
        page.table(ref_table)
    page.heading("Centralized removal, convex model")
    for text in convex_description(result) if centralized else [f"Not run: {missing['centralized']}."]:
        page.text(text)
    table_views(page, table, CENTRAL_VIEWS, status="audit's verdict")
    page.heading("Centralized removal, MLP")
    page.text(mlp_description(mlp_result) if mlp else f"Not run: {missing.get('centralized', 'not run')}.")
    table_views(page, mlp_table, CENTRAL_VIEWS, status="audit's verdict")
    if not calibration.empty:
        page.heading("R2D's calibration on the MLP, taken apart")
        page.text(r2d_calibration_sentence(calibration, mlp_result) + " Columns: sensitivity, the published Delta "
                  "(also the full-batch runs' bound); sensitivity_actual_steps, Theorem 3.1's recursion with the step "
                  "sizes taken; gap, gap_matched and full_batch_gap, the measured distances between the noiseless "
                  "unlearned and retrained models as run, with matched minibatches, and in the full-batch "
                  "constant-step setting.")
        page.table(calibration)
    if missing:
        page.heading("Missing").bullets([f"- {setting}: {reason}" for setting, reason in missing.items()])
    page.write(out)


DEC_TEXT = {
    "client": (
        "One D-SGD task (`common.decentralized`: the dataset's standardised pixels, IID shards, a fresh Erdos-Renyi "
        "graph every round, the same theta^0 and graphs for every training run); the last client leaves with all of "
        "its data. Each method starts from the trained state its paper assumes (`trained_by`; PDUDT from the same "
        "task trained by its Eq. 2, FedRecovery from FedSGD, FATS-Unl from FedAvg over sampled clients, HDUS from its "
        "seed models) and is judged on the remaining clients' models, averaged over them. memorisation_gap: forget "
        "minus test accuracy (about 0 for a model that never saw the forget set, IID data); status, paired over "
        "seeds: uninformative when any judged model, the method's or its original's, puts more than 95 % of its "
        "test predictions in one class (its gap is near zero whether or not it forgot), and unless the method's own "
        "original carried the forget set (its gap above retraining's by "
        "more than 0.005 on average, one-sided paired t-test at 5 %); then removed when the method is measurably "
        "below its original and not above retraining, kept when the reverse, partly removed when both. Attacks: "
        "the loss threshold (the papers' style), RMIA and LiRA (Carlini et al. 2022, on the same references; "
        "below), TPR at 1 % and 0.1 % FPR. Costs: "
        "per-sample gradient evaluations, bytes read from stored histories, "
        "floats communicated; claimed_epsilon: empty where the method claims none "
        "(the claim column of the result file says why). Mean over seeds, std beside the accuracies."),
    "sample": (
        "The same task; 10 % of every client's data leaves (`forget.kind: fraction`). Columns as above; DU runs "
        "sample-wise (its Algorithm 1 at every client), fine-tuning and retraining on the retained data."),
}


def rmia_sentence(runs: list[dict]) -> str:
    """How the strong attack was run in these result files (`rmia`; a record without it predates the online
    references: central references, offline with a = 0.3)."""
    if not runs:
        return ""
    info = [r.get("rmia") for r in runs]
    if any(i is None for i in info):
        return ("RMIA: this record predates the online references; its 4 references trained centrally on halves of "
                "half the test set (offline, a = 0.3 untuned) and its scores were not stored.")
    i = info[0]
    acc = [a for j in info for a in j["reference_train_accuracy"]]
    tail = (f"{i['members']} members (the forget set), {i['nonmembers']} non-members and {i['population']} population "
            f"samples z; the references' accuracy on their own halves {min(acc):.3f}-{max(acc):.3f}. Every judged "
            "model's scores are stored (`<setting>_s<seed>_rmia_scores.safetensors`), so TPR at any FPR can be "
            "recomputed")
    if min(j["nonmembers"] for j in info) < 1000:
        tail += (f"; TPR at 0.1 % FPR is empty: it needs at least 1,000 non-members, and the pool of twice the "
                 f"target's training set leaves {i['nonmembers']}")
    for name, name_label in attacks_of(runs).items():  # each other attack, with what it says of itself
        if name != "rmia":
            how = f": {i[name]}" if i.get(name) else ""
            declared = attack_protocol.REFERENCE_ATTACKS.all().get(name)
            tail += (f". {name_label} (`{declared.module if declared else name}`) on the same references{how} (its "
                     "module's docstring says how it scores)")
    if i["references"] == "online":
        return (f"RMIA online, as its paper runs it: {i['reference_models']} references trained by the target's own "
                "D-SGD recipe (architecture, clients, graphs, epochs, batch, step size, rounds) on complementary "
                "halves of a pool of the candidates and the population, so every sample is a member of half of them "
                f"and Pr(x) is their mean (no constant a); {tail}.")
    a = ", ".join(f"{j['a']:g}" for j in info)
    return (f"RMIA offline (the cheaper option, `attack.references: offline`): {i['reference_models']} references "
            "trained centrally on halves of half the test set, never on a candidate; a chosen on the references "
            f"themselves (each in turn the target; rmia.tune_a): {a} by seed; {tail}.")


def plain_summary(tables: dict[str, pd.DataFrame], centralized: dict[str, pd.DataFrame]) -> list[str]:
    """A few plain sentences computed from the tables: which methods removed what, at what cost, and whether the
    audited certificates held."""
    lines = []
    for setting, t in tables.items():
        if "memorisation_gap" not in t:
            continue
        done = t[t.status.str.startswith("removed")].method.tolist()
        kept = t[t.status.str.startswith("kept")].method.tolist()
        partly = t[t.status.str.startswith("partly removed")].method.tolist()
        silent = t[t.status.str.startswith(UNINFORMATIVE)].method.tolist()
        lines.append(f"- {setting} removal: removed like retraining: {', '.join(done) or 'none'}; kept what their "
                     f"original carried: {', '.join(kept) or 'none'}; removed part of it: "
                     f"{', '.join(partly) or 'none'}; "
                     f"uninformative (nothing measurable to remove, or neither removal nor what is left measurable): "
                     f"{', '.join(silent) or 'none'}.")
        ref = t[t.method == "retrain"]
        if not ref.empty and ref.gradient_evaluations.iloc[0]:
            cheap = t[t.status.str.startswith("removed") & (t.gradient_evaluations < ref.gradient_evaluations.iloc[0])]
            kept_utility = cheap.test_accuracy >= ref.test_accuracy.iloc[0] - UTILITY_MARGIN
            lost = ", ".join(f"{r.method} (test accuracy {r.test_accuracy:.3f})"
                             for r in cheap[~kept_utility].itertuples())
            lines.append(f"- {setting} removal: cheaper than retraining in gradient evaluations and still removed, at "
                         f"retraining's utility (test accuracy {ref.test_accuracy.iloc[0]:.3f}, less "
                         f"{UTILITY_MARGIN:g} at most): {', '.join(cheap[kept_utility].method) or 'none'}"
                         + (f"; removed only by giving up utility: {lost}" if lost else "") + ".")
    for model, c in centralized.items():
        if "audit_epsilon_lower" not in c:
            continue
        audited = c[c.status.str.match(AUDITED)]
        named = {kind: ", ".join(audited[audited.status.str.startswith(kind)].method) or "none"
                 for kind in (VIOLATED, NOT_FAULTED, UNINFORMATIVE)}
        line = (f"- centralized, {model}: **violated** (the exact epsilon of the pair or the audit's corrected bound "
                f"above the claim): {named[VIOLATED]}; not faulted (the exact epsilon of the pair, or an audit with "
                f"shown power, within the claim): {named[NOT_FAULTED]}; uninformative (no exact epsilon, and the "
                f"audit faults none of the method's positive controls; or an exact epsilon of 0 by construction, the "
                f"noiseless output being retraining's): {named[UNINFORMATIVE]}")
        controls = c[c.status.str.startswith("control ")]
        if len(controls):
            seen = controls[controls.status.str.startswith("control faulted")].method.tolist()
            line += (f"; positive controls (noise for a known epsilon above the claim) that the audit faults: "
                     f"{len(seen)} of {len(controls)}{': ' + ', '.join(seen) if seen else ''}")
        over = audited[audited.noiseless_gap > audited.sensitivity] if "sensitivity" in audited else audited[:0]
        if len(over):
            line += ("; measured gap above the certificate's own sensitivity bound: " +
                     ", ".join(f"{r.method} ({r.noiseless_gap:.3g} > {r.sensitivity:.3g})" for r in over.itertuples()))
        plain = c[c.status.str.startswith(NO_CERTIFICATE)].method.tolist()
        if plain:
            line += f"; without a certificate (nothing to audit): {', '.join(plain)}"
        lines.append(line + ".")
    return lines


AUDIT_COLUMNS = ["method", "control_epsilon", "claimed_epsilon", "sigma", "test_acc_unlearned", "exact_epsilon",
                 "audit_epsilon_corrected", "white_box_epsilon_corrected", "gdp_epsilon_corrected", "power_as_run",
                 "power_2x", "audit_runs", "status"]
FRONT_COLUMNS = ["method", "test_accuracy", "forget_accuracy", "memorisation_gap", "rmia_tpr_at_1pct_fpr",
                 "gradient_evaluations", "claimed_epsilon", "status"]


def summary(out_dir: str | Path) -> Summary:
    """The front page's row: whether every audited certificate's claim is at least the audit's lower bound; and
    its section there: the plain-language summary, the figure and the three tables (the report has every column)."""
    out = Path(out_dir)
    section: list[tuple[str, object]] = []
    if (out / "summary.json").is_file():
        section.append(("ul", json.loads((out / "summary.json").read_text())["summary"]))
    if (out / "utility_cost.png").is_file():
        section.append(("img", ("common_ground/utility_cost.png", "test accuracy against the gradient evaluations "
                                                                  "of unlearning, by claimed epsilon")))
    for table, title, columns in (
            ("client", "Decentralized client removal", FRONT_COLUMNS),
            ("sample", "Decentralized sample removal", FRONT_COLUMNS),
            ("centralized", "Centralized removal, convex model", AUDIT_COLUMNS),
            ("centralized_mlp", "Centralized removal, MLP", AUDIT_COLUMNS)):
        df = read_table(out, table)
        if not df.empty:
            section += [("p", (f"**{title}** ([all columns](common_ground/index.md)):",)),
                        ("table", (select(df, columns), ".4g"))]
    return Summary("common_ground", "Common ground (every method on one task, an audit of each certificate)",
                   "no certified method's claim is violated: its claimed epsilon is at least the exact epsilon of the "
                   "audited pair and the audit's corrected lower bound, and twice it at least the canary audit's",
                   verdict([s.split(":")[0] for s in statuses(out, TABLES)], good=("within", NOT_FAULTED),
                           bad=("outside", VIOLATED)), count_tables(out, TABLES), section, TABLES)
