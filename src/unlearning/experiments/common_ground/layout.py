"""Where the decentralized settings' parts live (issue 55, item 3), for the workflow (common.smk) and the jobs
(parts.py) alike. Every function takes plain values or Snakemake wildcards ("{seed}") and a root
(the working directory).

- artifacts/common_ground/<setting>_s<seed>/references.safetensors: the attack's reference models' probabilities
  (one job per setting and seed);
- artifacts/common_ground/<setting>_s<seed>/<family>/: one trained original (one job per setting, seed and training
  family; its checkpoint, histories and state);
- results/common_ground/parts/<setting>/s<seed>/original_<family>.safetensors: that original judged;
- results/common_ground/parts/<setting>/methods/<method>.safetensors: one method run and judged on every seed (one
  job per setting and method);
- results/common_ground/<setting>_s<seed>.json (and its scores and timing): a setting's seeds put together with the
  audits (one job per setting), what the report reads;
- results/common_ground/parts/<table>/<method>.json: one method's rows on a centralized table (central.py: one job per
  table and method), and results/common_ground/<table>.json the table put together (one job per table).
"""

from __future__ import annotations

from ...families import FAMILIES
from ...methods import METHODS

SETTINGS = ("client", "sample")


def _at(root, path: str) -> str:
    return path if root in (".", "") else f"{root}/{path}"


def family_root(setting, seed, root=".") -> str:
    return _at(root, f"artifacts/common_ground/{setting}_s{seed}")


def references(setting, seed, root=".") -> str:
    return f"{family_root(setting, seed, root)}/references.safetensors"


def family_dir(setting, seed, family, root=".") -> str:
    return f"{family_root(setting, seed, root)}/{family}"


def original(setting, seed, family, root=".") -> str:
    return _at(root, f"results/common_ground/parts/{setting}/s{seed}/original_{family}.safetensors")


def original_timing(setting, seed, family, root=".") -> str:
    return _at(root, f"timings/common_ground/parts/{setting}/s{seed}/original_{family}.json")


def method(setting, name, root=".") -> str:
    return _at(root, f"results/common_ground/parts/{setting}/methods/{name}.safetensors")


def method_timing(setting, name, root=".") -> str:
    return _at(root, f"timings/common_ground/parts/{setting}/methods/{name}.json")


def canary(setting, name, root=".") -> str:
    """The canary audit of method `name` (canary.py), every seed."""
    return _at(root, f"results/common_ground/parts/{setting}/canary/{name}.json")


def result(setting, seed, root=".") -> str:
    return _at(root, f"results/common_ground/{setting}_s{seed}.json")


def scores(setting, seed, root=".") -> str:
    return _at(root, f"results/common_ground/{setting}_s{seed}_rmia_scores.safetensors")


def timing(setting, seed, root=".") -> str:
    return _at(root, f"timings/common_ground/{setting}_s{seed}.json")


def central(table, method=None, root=".", kind="results") -> str:
    """A centralized table's file (central.py; `table` centralized | centralized_mlp, `kind` results | timings):
    one method's rows, or (no `method`) the table put together, what the report reads."""
    return _at(root, f"{kind}/common_ground/{table if method is None else f'parts/{table}/{method}'}.json")


def not_applying(dec: dict, setting: str) -> list[str]:
    """The methods another setting of `common.decentralized` (`dec`) lists that do not apply to `setting`: its result
    names them, with why (what its put-together reads besides its own methods)."""
    return [m for m in dict.fromkeys(m for s in SETTINGS for m in dec[s]["methods"])
            if setting in METHODS[m].does_not_apply]


def families_of(methods) -> list[str]:
    """The training families `methods` (names) start from, in the order of first use."""
    return list(dict.fromkeys(METHODS[m].original for m in methods))


# ----------------------------------------------------------------------------------------------- what each part reads

def _dotted(block: dict, key: str):
    for part in key.split("."):
        block = block.get(part, {}) if isinstance(block, dict) else {}
    return block


def task_params(dec: dict, setting: str) -> dict:
    """What every part of `setting` reads of `common.decentralized` (`dec`): all but the settings' blocks, the seed
    list, the methods' and the families' own blocks; with the setting's forget request."""
    own = {METHODS[m].block for m in METHODS}
    own |= {p.split(".")[0] for f in FAMILIES for p in FAMILIES[f].reads}
    return {**{k: v for k, v in dec.items() if k not in (*SETTINGS, "seeds", "canary") and k not in own},
            "forget": dec[setting]["forget"]}


def family_params(dec: dict, setting: str, family: str) -> dict:
    return {**task_params(dec, setting), **{p: _dotted(dec, p) for p in FAMILIES[family].reads}}


def method_params(dec: dict, budget: dict, setting: str, method: str) -> dict:
    """The task, the method's own block, the budget and the seeds (a method's job runs every seed)."""
    key = METHODS[method].block
    return {**task_params(dec, setting), key: dec.get(key, {}), "budget": budget, "seeds": dec["seeds"]}


def canary_params(dec: dict, budget: dict, setting: str, method: str) -> dict:
    """A canary audit's: the method's, its family's own blocks (it trains the original again) and the audit's."""
    family = METHODS[method].original
    return {**method_params(dec, budget, setting, method), **family_params(dec, setting, family),
            "canary": dec["canary"]}


def audited(dec: dict, setting: str) -> list[str]:
    """The setting's methods a canary audit runs for: those that take the common budget (their claim is at it)."""
    return [m for m in dec[setting]["methods"] if METHODS[m].takes_budget]
