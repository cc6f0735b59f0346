"""Which methods a PDUDT experiment runs and where their files lie under the working directory: one place for the
workflow's rules (workflow/rules/common.smk) and for the steps that run every method of an experiment in one job.

A method is a registered one (methods/), read from its declaration, or one of the paper's own rows: Origin and
FedRecovery's original (trained, not unlearned) and perturbed retraining (Eq. 5: retraining plus noise). Retraining
runs in the spine's `unlearn` rule (perturbed retraining starts from it); PDUDT's own D-SGD run (pretrain) is the
original of the methods whose declared family is a D-SGD run; every other method's family trains in
`pdudt_server` (unlearning/families/).
"""

from __future__ import annotations

from ...methods import METHODS

OWN_RUN = ("dsgd", "eq2")  # the families PDUDT's pretrain serves (its train.mixing decides which it is)
CONTINUED = ("original", "retrain", "perturbed_retrain", "pdudt", "pdudt_es", "noise_only")  # checkpoint B
SETTING_METHODS = ("original", "retrain", "pdudt", "pdudt_es")  # the settings table's rows (issue 15)


def noised(method: str) -> bool:
    """One variant per sigma: perturbed retraining, and every method whose block declares a sigma."""
    return method == "perturbed_retrain" or (method in METHODS and "sigma" in (METHODS[method].params or {}))


def has_server(method: str) -> bool:
    """A method whose family is not PDUDT's D-SGD run: its family trains in pdudt_server."""
    return method in METHODS and METHODS[method].original not in OWN_RUN


def unlearned(methods: list[str]) -> list[str]:
    """The methods of pdudt_variants: all but the originals and retraining (the spine's unlearn rule)."""
    return [m for m in methods if m == "perturbed_retrain" or (m in METHODS and m != "retrain")]


def evaluated(methods: list[str]) -> list[str]:
    """Every result of an experiment running `methods` (its `methods` key): Origin, each method, and FedRecovery's
    own original (the FedAvg server's global model before the removal) where FedRecovery runs."""
    return ["original", *methods, *(["fedrecovery_original"] if "fedrecovery" in methods else [])]


def continued(methods: list[str], subsequent_rounds: int = 1) -> list[str]:
    """The methods trained on for the subsequent rounds (checkpoint B); none where the experiment sets 0 of them."""
    return [m for m in evaluated(methods) if m in CONTINUED] if subsequent_rounds else []


def server_root(exp: str) -> str:
    return f"artifacts/{exp}/server"


def server_dir(exp: str, method: str) -> str:
    """A method's own training run (pdudt_server): its family's directory."""
    return f"{server_root(exp)}/{METHODS[method].original}"


def unlearn_dir(exp: str, method: str) -> str:
    return f"artifacts/{exp}/unlearn/{method}"


def trained_dir(exp: str, method: str) -> str:
    """What an unlearning method starts from: the retrained models (perturbed retraining), the baseline's own
    training run (FedRecovery, FATS, HDUS) or the D-SGD run (PDUDT, PDUDT (ES), noise only)."""
    if method == "perturbed_retrain":
        return unlearn_dir(exp, "retrain")
    if has_server(method):
        return server_dir(exp, method)
    return f"artifacts/{exp}/pretrain"


def timing(exp: str, name: str) -> str:
    """A step's wall time (Table 2 reads them): `name` is a method, or server_<kind>."""
    return f"timings/{exp}/{name}.json"


def models_a(exp: str, method: str) -> str:
    """The models right after unlearning (checkpoint A)."""
    if method == "original":
        return f"artifacts/{exp}/pretrain/models.safetensors"
    if method == "fedrecovery_original":
        return f"{server_dir(exp, 'fedrecovery')}/models.safetensors"
    return f"{unlearn_dir(exp, method)}/models.safetensors"


def cost(exp: str, method: str) -> str | None:
    """The unlearning's cost file; none for the two originals."""
    if method in ("original", "fedrecovery_original"):
        return None
    return models_a(exp, method).replace("models.safetensors", "cost.json")


def subsequent_dir(exp: str, method: str) -> str:
    return f"artifacts/{exp}/subsequent/{method}"


def models_b(exp: str, method: str) -> str | None:
    """The models after the subsequent rounds (checkpoint B); none where the method is not continued."""
    return f"{subsequent_dir(exp, method)}/models.safetensors" if method in CONTINUED else None


def result_a(exp: str, method: str) -> str:
    """Checkpoint A's evaluation alone (its own job, so that Table 3's A rows need no subsequent rounds)."""
    return f"results/{exp}/checkpoint_a/{method}.json"


def result(exp: str, method: str) -> str:
    """The whole evaluation: A, and B where the method continues."""
    return f"results/{exp}/{method}.json"
