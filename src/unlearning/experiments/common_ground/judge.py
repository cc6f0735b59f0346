"""The common ground's judge (issue 16, 36, 56): test and forget accuracy, the loss-threshold attack and the
reference-model attacks of `attack.scores` (RMIA, LiRA: evaluate/attacks/protocol.py) for any list of per-client
models of one decentralized setup, its reference models trained once per (setting, seed) and storable
(`references()`; `Judge(setup, references)` rebuilds it without training)."""

from __future__ import annotations

import copy

import numpy as np
import torch
from scipy.special import expit

from ... import floatmath
from ...evaluate.attacks import rmia
from ...evaluate.attacks.loss_threshold import loss_threshold_auc
from ...evaluate.attacks.protocol import REFERENCE_ATTACKS, References, columns, log_odds
from ...evaluate.attacks.references import train_references
from ...evaluate.attacks.shadow import stratified_halves, train_shadows
from ...evaluate.forward import logits_in_batches
from ...evaluate.metrics import class_matched_pairs
from ...experiment import Setup
from ...seeding import generator


class Judge:
    """Test and forget accuracy, the loss-threshold attack and the reference-model attacks of `attack.scores` (each
    fitted on the same references), for any list of per-client logit functions; the reference models are
    trained once per setup (`attack.references`):

    - online (RMIA as its paper runs it): `reference_models` references trained by the target's own D-SGD recipe
      (evaluate/attacks/references.py) on complementary halves of a pool of the candidates (members: the forget
      set; non-members: held-out test samples) and population samples z (the other test half), so that every
      candidate and every z is a member of exactly half of them; Pr(x) and Pr(z) are the mean over all of them.
      The pool is at most twice the target's training set, so that a reference trains on at most the target's
      amount of data: non-members and z are min(half the test set, (2 n_target - |forget|) / 2) each.
    - offline (cheaper, labelled): references trained centrally for `reference_epochs` on halves of half the test
      set (never on a candidate), Pr(x) by RMIA's eq. 10 with `a` chosen on the references themselves (rmia.tune_a);
      non-members and z: the two test halves whole.

    Every model's RMIA scores are kept (`scores`: per judged row, [models, candidates], members first; stored as
    `score_counts`)."""

    def __init__(self, setup: Setup, references: dict[str, torch.Tensor] | None = None):
        """`references`: what `references()` returned for this setup (stored by the common ground's references
        part), else the reference models are trained here."""
        a = setup.cfg["attack"]
        self.setup, self.mode = setup, a["references"]
        forget = setup.request.samples(setup.data.indices).to(setup.data.x.device)
        self.x_forget, self.y_forget = setup.data.x[forget], setup.data.y[forget].cpu()
        pop_idx, eval_idx = stratified_halves(setup.y_test.cpu(), setup.seed)
        if self.mode == "online":
            n_target = sum(int(k.sum()) for k in setup.data.keep)
            m = min(len(pop_idx), len(eval_idx), (2 * n_target - len(self.y_forget)) // 2)
            if m < 1:
                raise ValueError(f"{setup.name}: attack.references = online leaves no non-member candidates (the "
                                 f"forget set, {len(self.y_forget)}, fills the pool of twice the training set, "
                                 f"{n_target}); valid: references: offline")
            gen = generator(setup.seed, setup.name, "rmia-subsample")
            pop_idx = pop_idx[torch.randperm(len(pop_idx), generator=gen)[:m]].sort().values
            eval_idx = eval_idx[torch.randperm(len(eval_idx), generator=gen)[:m]].sort().values
        self.x_pop, self.y_pop = setup.x_test[pop_idx.to(setup.device)], setup.y_test.cpu()[pop_idx]
        self.x_out, self.y_out = setup.x_test[eval_idx.to(setup.device)], setup.y_test.cpu()[eval_idx]
        self._refs = self._train(pop_idx) if references is None else self._checked(references)
        r = {k: v.numpy() for k, v in self._refs.items()}
        self.phi_ref, phi_ref_pop, pop_member = r["phi_ref"], r["phi_ref_pop"], r["pop_member"]
        self.cand_member = r["cand_member"] if self.mode == "online" else None
        self.reference_accuracy = r["reference_accuracy"].tolist()
        self.a, self.a_auc = (rmia.tune_a(expit(phi_ref_pop), pop_member) if self.mode == "offline" else
                              (None, None))
        self.phi_ref_pop, self.pop_member = phi_ref_pop, pop_member
        if "scores" not in a:
            raise KeyError("common.decentralized.attack.scores: missing; valid: a list of reference-model attacks "
                           "holding rmia (params.yaml ships [rmia, lira])")
        self.attacks = {name: REFERENCE_ATTACKS[name] for name in a["scores"]}
        self._fit()
        self.pairs = class_matched_pairs(self.y_forget, setup.y_test.cpu(), a["mia_samples"],
                                         generator(setup.seed, setup.name, "mia"))
        self.scores: dict[str, np.ndarray] = {}

    def _fit(self) -> None:
        """Every attack fitted on this judge's references."""
        refs = References(self.phi_ref, self.phi_ref_pop, self.cand_member, self.pop_member, self.a)
        self.fitted = {name: attack.fit(refs) for name, attack in self.attacks.items()}

    def _train(self, pop_idx: torch.Tensor) -> dict[str, torch.Tensor]:
        """The references' true-class log-odds on the candidates and the population, their memberships and
        train accuracies (online: trained here by the target's recipe; offline: shadow models)."""
        setup, a = self.setup, self.setup.cfg["attack"]
        x_cand, y_cand = torch.cat([self.x_forget, self.x_out]), torch.cat([self.y_forget, self.y_out])
        if self.mode == "online":
            refs = train_references(setup, torch.cat([x_cand, self.x_pop]), torch.cat([y_cand, self.y_pop]),
                                    a["reference_models"])
            thetas, member = refs["theta"], refs["member"]
            out = {"cand_member": member[:, :len(y_cand)], "pop_member": member[:, len(y_cand):],
                   "reference_accuracy": refs["train_accuracy"].double()}
        else:
            refs = train_shadows(setup, pop_idx, a["reference_models"], a["reference_epochs"])
            thetas = refs["shadow_theta"]
            out = {"pop_member": refs["shadow_trained_on"][:, pop_idx],
                   "reference_accuracy": torch.as_tensor(refs["shadow_train_accuracy"], dtype=torch.float64)}
        out["phi_ref"] = torch.from_numpy(np.stack([self._true(self._flat(t), x_cand, y_cand) for t in thetas]))
        out["phi_ref_pop"] = torch.from_numpy(np.stack([self._true(self._flat(t), self.x_pop, self.y_pop)
                                                        for t in thetas]))
        return out

    def _checked(self, refs: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
        """Stored references, checked against this setup's candidates and population."""
        n_cand, n_pop = len(self.y_forget) + len(self.y_out), len(self.y_pop)
        need = {"phi_ref": n_cand, "phi_ref_pop": n_pop, "pop_member": n_pop,
                **({"cand_member": n_cand} if self.mode == "online" else {})}
        for key, n in need.items():
            if key not in refs or refs[key].shape[-1] != n:
                raise ValueError(f"stored references: {key} {tuple(refs[key].shape) if key in refs else 'missing'} "
                                 f"does not fit this setup ({n} samples): re-run the references part")
        return refs

    def references(self) -> dict[str, torch.Tensor]:
        """What a Judge of the same setup is built from without training (`Judge(setup, references)`)."""
        return dict(self._refs)

    def with_references(self, k: int) -> "Judge":
        """This judge with its first `k` references only (complementary pairs: the first k of a larger set are
        the k a run with `reference_models: k` trains), RMIA refitted on them (offline: `a` tuned again)."""
        if not 2 <= k <= len(self.phi_ref) or k % 2:
            raise ValueError(f"common.decentralized.attack.reference_counts: {k}; valid: even numbers from 2 to "
                             f"reference_models' largest, {len(self.phi_ref)}")
        sub = copy.copy(self)
        sub.phi_ref, sub.phi_ref_pop = self.phi_ref[:k], self.phi_ref_pop[:k]
        sub.cand_member = None if self.cand_member is None else self.cand_member[:k]
        sub.pop_member = self.pop_member[:k]
        if self.mode == "offline":
            sub.a, sub.a_auc = rmia.tune_a(expit(sub.phi_ref_pop), sub.pop_member)
        sub._fit()
        sub.scores = {}
        return sub

    def describe(self) -> dict:
        """What the attacks were, for the result file: the references, each attack's own description (LiRA's
        variance) and the attacks run, in their order (`attacks`)."""
        return {"references": self.mode, "reference_models": len(self.phi_ref), "a": self.a,
                **{name: f.describe for name, f in self.fitted.items() if f.describe}, "a_mean_auc": self.a_auc,
                "members": len(self.y_forget), "nonmembers": len(self.y_out),
                "population": len(self.y_pop), "reference_train_accuracy": self.reference_accuracy,
                "attacks": list(self.attacks)}  # a list: the result file sorts a mapping's keys

    def score_counts(self) -> dict[str, torch.Tensor]:
        """The kept scores exactly and compactly: each is (the number of population samples z it beats) / |z|,
        so the counts (int16 where |z| allows) are stored and a score is count / population."""
        m = len(self.y_pop)
        out = {}
        for key, s in self.scores.items():
            counts = np.rint(s * m)
            assert np.array_equal(counts / m, s), key  # a score is a fraction of the population, exactly
            out[key] = torch.from_numpy(counts.astype(np.int16 if m < 2**15 else np.int32))
        return out

    def _flat(self, theta: torch.Tensor):
        setup = self.setup
        return lambda x: torch.cat(list(logits_in_batches(setup, theta.to(setup.device), x))).cpu()

    @staticmethod
    def _true(logits_fn, x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
        """The true-label log-odds (protocol.log_odds, float64) of a model on (x, y)."""
        return log_odds(logits_fn(x).numpy(), y.numpy())

    def models(self, theta: torch.Tensor) -> list:
        """One logit function per row of stacked flat models."""
        return [self._flat(row) for row in theta]

    def one(self, logits_fn) -> dict:
        """The metrics of one model (a function x -> logits on the CPU)."""
        s = self.setup
        y_test = s.y_test.cpu()
        p_test, p_forget = logits_fn(s.x_test).softmax(1), logits_fn(self.x_forget).softmax(1)
        nll = lambda p, y: -floatmath.log(p.gather(1, y.long()[:, None])[:, 0].clamp_min(1e-12))  # noqa: E731
        phi_cand = np.r_[self._true(logits_fn, self.x_forget, self.y_forget),
                         self._true(logits_fn, self.x_out, self.y_out)]
        phi_pop = self._true(logits_fn, self.x_pop, self.y_pop)
        members = len(self.y_forget)
        predicted = p_test.argmax(1)
        out = {"test_accuracy": float((predicted == y_test).float().mean()),
               "top_class_share": float(torch.bincount(predicted).max() / len(predicted)),
               "forget_accuracy": float((p_forget.argmax(1) == self.y_forget).float().mean()),
               "loss_threshold_auc": loss_threshold_auc(nll(p_forget, self.y_forget)[self.pairs[0]],
                                                        nll(p_test, y_test)[self.pairs[1]])}
        for name, fitted in self.fitted.items():  # protocol.COLUMNS: AUC, TPR at 1 % and at 0.1 % FPR
            score = fitted.score(phi_cand, phi_pop)
            m = rmia.metrics(score[:members], score[members:])
            auc, tpr1, tpr01 = columns(name)
            out.update({auc: m["auc"], tpr1: m["tpr_at_0.01_fpr"],
                        tpr01: m["tpr_at_0.001_fpr"] if m["resolved_0.001"] else None})
            if name == "rmia":
                out["scores"] = score
        return out

    def __call__(self, logits_fns: list, key: str) -> dict:
        """The mean over the remaining clients' models (one function each), with the spread over clients and each
        model's share of test predictions in its most predicted class (`top_class_shares`: the report's one-class
        check); their RMIA scores are kept under `key`."""
        rows = [self.one(f) for f in logits_fns]
        self.scores[key] = np.stack([r.pop("scores") for r in rows])
        shares = [r.pop("top_class_share") for r in rows]
        out = {k: None if any(r[k] is None for r in rows) else float(np.mean([r[k] for r in rows])) for k in rows[0]}
        out["models"] = len(rows)
        out["top_class_shares"] = shares
        out["forget_accuracy_min_max"] = [min(r["forget_accuracy"] for r in rows),
                                          max(r["forget_accuracy"] for r in rows)]
        return out
