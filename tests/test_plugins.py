"""The plugin layer (issue 67): one registry per kind, filled by importing the modules that declare plugins, so that
what the plan reads is what the jobs run; every plugin's parameter block checked against its declaration before any
job. Each bad input is refused by `check-params` with one line and exit 2."""

from __future__ import annotations

import copy
import sys
import textwrap
from importlib import metadata

import pytest
import yaml

from conftest import ROOT
from unlearning import plugins
from unlearning.__main__ import main
from unlearning.config import check_params
from unlearning.methods import CENTRAL, METHODS

PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text())


def refused(capsys, tmp_path, params: dict) -> str:
    """check-params on `params`: its exit status must be 2 and its error one line, returned."""
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params))
    assert main(["--params", str(path), "check-params"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1, err
    return err


def module_in(package, tmp_path, monkeypatch, name: str, text: str) -> None:
    """A module `name` of `package` (a folder added to its path): the registries scan it when next read."""
    folder = tmp_path / f"extra_{package.__name__.replace('.', '_')}"
    folder.mkdir(exist_ok=True)
    (folder / f"{name}.py").write_text(textwrap.dedent(text))
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(folder)])
    monkeypatch.delitem(sys.modules, f"{package.__name__}.{name}", raising=False)


def method_module(tmp_path, monkeypatch, name: str, text: str) -> None:
    import unlearning.methods as package

    module_in(package, tmp_path, monkeypatch, name, "from unlearning.methods import register\n" + textwrap.dedent(text))


# ----------------------------------------------------------------------------------------------- registries


def test_what_a_module_declares_is_what_importing_it_declares_computed_keywords_included(
        tmp_path, monkeypatch, plugin_scratch):
    """A keyword computed at import (a concatenation, a module constant, a condition), the decorator reached through
    the package (`@methods.register`), an aliased import and `name=` as a keyword all declare as written; a
    `@register` inside a function that never runs declares nothing."""
    method_module(tmp_path, monkeypatch, "computed", """
        import unlearning.methods as methods
        from unlearning.methods import register as declare

        WHY = "it removes whole clients only"
        FAMILY = "e" + "q2"


        @register("computed_a", original=FAMILY, does_not_apply={"sample": WHY}, takes_budget=len(WHY) > 3)
        def a(state, request, params):
            return None


        @methods.register("computed_b", label="B " + "label")
        def b(state, request, params):
            return None


        @declare(name="computed_c")
        def c(state, request, params):
            return None


        def never_called():
            @register("phantom")
            def d(state, request, params):
                return None
        """)
    a = METHODS["computed_a"]
    assert (a.original, a.does_not_apply, a.takes_budget) == ("eq2", {"sample": "it removes whole clients only"}, True)
    assert METHODS["computed_b"].label == "B label" and METHODS["computed_c"].module == "unlearning.methods.computed"
    assert "phantom" not in METHODS
    params = copy.deepcopy(PARAMS)
    params["common"]["decentralized"]["client"]["methods"] = ["retrain", "computed_a"]
    params["common"]["decentralized"]["canary"]["canaries"] = 200
    assert check_params(params)  # its family exists; it applies to the client setting


@pytest.mark.parametrize("keywords, bad", [
    ('original="e" + "q3"', "original='eq3'"),
    ('does_not_apply={"sampel": "typo"}', "does_not_apply={'sampel': 'typo'}"),
    ("takes_budget=1", "takes_budget=1"),
    ('params={"rounds": 5}', "params={'rounds': 5}"),
])
def test_a_declaration_the_pipeline_cannot_read_is_refused_naming_its_module_and_line(
        keywords, bad, tmp_path, monkeypatch, capsys, plugin_scratch):
    """A method is checked as declared, configured or not: a family no module provides, a setting that does not
    exist, a flag that is not one, a parameter that is not a declaration; the error names the module and the line of
    the method's function."""
    method_module(tmp_path, monkeypatch, "unreadable", f"""
        @register("unreadable", {keywords})
        def unreadable(state, request, params):
            return None
        """)
    err = refused(capsys, tmp_path, PARAMS)
    assert f"method 'unreadable' (unlearning.methods.unreadable, line 3): {bad} cannot be read; valid:" in err, err


def test_a_runner_declaring_a_model_that_is_not_one_is_refused(tmp_path, monkeypatch, capsys, plugin_scratch):
    import unlearning.methods as package

    module_in(package, tmp_path, monkeypatch, "runner", """
        from unlearning.methods import register_central


        @register_central("mine", model="convex", does_not_apply={"mpl": "typo"})
        def run(bench):
            return None
        """)
    err = refused(capsys, tmp_path, PARAMS)
    assert ("centralized runner 'mine' (unlearning.methods.runner, line 5): does_not_apply={'mpl': 'typo'} cannot "
            "be read; valid: {model: why} with the models it does not run on (mlp)") in err, err


def test_a_name_declared_twice_is_an_error_naming_both_modules_before_any_job(tmp_path, monkeypatch, capsys,
                                                                              plugin_scratch):
    method_module(tmp_path, monkeypatch, "second_du", """
        @register("du")
        def du(state, request, params):
            return None
        """)
    err = refused(capsys, tmp_path, PARAMS)
    assert "method 'du': declared by unlearning.methods.du and by unlearning.methods.second_du" in err


def test_an_entry_point_declaring_a_taken_name_or_nothing_is_an_error_naming_it(tmp_path, monkeypatch, capsys,
                                                                               plugin_scratch):
    """Outside packages (entry points of `unlearning.methods`) are imported like the package's modules: one that
    declares a name the package has is refused naming both; one whose module declares nothing is refused naming
    the entry point."""
    (tmp_path / "outside_du.py").write_text("from unlearning.methods import register\n\n\n"
                                             "@register('du')\ndef du(state, request, params):\n    return None\n")
    (tmp_path / "outside_nothing.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for module, expected in (("outside_du", "method 'du': declared by unlearning.methods.du and by outside_du"),
                             ("outside_nothing", "entry point 'mine' (outside_nothing, group unlearning.methods): "
                                                 "its module declares no plugin")):
        points = [metadata.EntryPoint("mine", module, plugins.GROUP)]
        monkeypatch.setattr(plugins.metadata, "entry_points", lambda group, points=points: points)
        assert expected in refused(capsys, tmp_path, PARAMS)
        sys.modules.pop(module, None)


def test_a_plugin_module_that_cannot_be_imported_is_named(tmp_path, monkeypatch, capsys, plugin_scratch):
    import unlearning.evaluate.attacks as attacks

    module_in(attacks, tmp_path, monkeypatch, "broken", "import not_a_module_anywhere\n")
    err = refused(capsys, tmp_path, PARAMS)
    assert "plugin module unlearning.evaluate.attacks.broken: cannot be imported (ModuleNotFoundError" in err


def test_a_dataset_module_missing_a_declaration_is_named_with_what_is_valid(tmp_path, monkeypatch, capsys,
                                                                           plugin_scratch):
    import unlearning.data.sources as sources

    module_in(sources, tmp_path, monkeypatch, "half", "CLASSES = 10\nSHAPE = (1, 28, 28)\nRAW_FILE = None\n")
    err = refused(capsys, tmp_path, PARAMS)
    assert "dataset module unlearning.data.sources.half: TRAIN_SIZE is missing; valid: a positive integer" in err


# ----------------------------------------------------------------------------------------------- parameter blocks

def _dec(p):
    return p["common"]["decentralized"]


def _cen(p):
    return p["common"]["centralized"]


BAD = [  # (edit of params.yaml, what the one line must say)
    (lambda p: _dec(p)["neggrad_plus"].update(alhpa=0.9),
     "common.decentralized.neggrad_plus.alhpa: unknown key; did you mean alpha? valid keys here: alpha, lr, rounds"),
    (lambda p: _dec(p)["neggrad_plus"].update(alpha=1.5),
     "common.decentralized.neggrad_plus.alpha: 1.5 is greater than the maximum of 1; valid: a number >= 0 and <= 1"),
    (lambda p: _dec(p)["salun"].update(ratio=0), "common.decentralized.salun.ratio: 0 is less than or equal to the "
                                                 "minimum of 0; valid: a number > 0 and <= 1"),
    (lambda p: _dec(p)["salun"].update(ratio=1.5), "common.decentralized.salun.ratio: 1.5 is greater than the maximum"),
    (lambda p: _dec(p)["finetune"].update(rounds=0), "common.decentralized.finetune.rounds: 0 is less than the minimum "
                                                     "of 1; valid: an integer >= 1"),
    (lambda p: _cen(p)["neggrad_plus"].update(steps=-1), "common.centralized.neggrad_plus.steps: -1 is less than"),
    (lambda p: _cen(p)["hf"].update(lr=0.1), "common.centralized.hf.lr: unknown key; did you mean lr0?"),
    (lambda p: _dec(p)["rrdu"]["unlearn"].update(hopz=3), "common.decentralized.rrdu.unlearn.hopz: unknown key; did "
                                                          "you mean hops?"),
    (lambda p: _dec(p).update(salunn={"ratio": 0.5}), "common.decentralized.salunn: unknown key; did you mean salun?"),
    (lambda p: _dec(p)["client"].update(methods=[]), "common.decentralized.client.methods: [] should be non-empty"),
    (lambda p: _dec(p)["sample"]["methods"].append("neggrad"), "common.decentralized.sample.methods.5: 'neggrad' is "
                                                               "not valid; did you mean neggrad_plus?"),
    (lambda p: _dec(p)["attack"]["scores"].append("lria"), "common.decentralized.attack.scores.2: 'lria' is not "
                                                           "valid; did you mean"),
    (lambda p: p["cdfl"]["unlearn"].update(damping_by_dataset={"svhn2": 1.0}),
     "cdfl.unlearn.damping_by_dataset.svhn2: unknown key; did you mean svhn? valid keys here: cifar10"),
    (lambda p: p["pdudt"]["models"].update(kmnist="mlp"), "pdudt.models.kmnist: unknown key; did you mean mnist?"),
    (lambda p: p["common"]["quick"]["decentralized"]["canary"].update(guesses=5000),
     "common.decentralized.canary.guesses: 5000 a side, but 100 canaries give 50 a side at most; valid: at most 50"),
    (lambda p: _dec(p)["fats"].update(clients_per_round=11),
     "common.decentralized.fats.clients_per_round: 11 of 10 clients; valid: at most common.decentralized.clients"),
    (lambda p: p["common"]["quick"]["decentralized"]["pdudt"].update(es_rounds=21),
     "common.decentralized.pdudt.es_rounds: 21 exceeds the 20 rounds trained"),
    (lambda p: p["common"]["budget"].update(epsilon=2.0), "common.budget.epsilon: 2: DU's certificate"),
    (lambda p: _dec(p)["client"]["methods"].append("noise_only") or _dec(p)["sample"]["methods"].append("fats"),
     "common.decentralized.sample.methods: 'fats' does not apply to this setting"),
]


@pytest.mark.parametrize("edit, expected", BAD, ids=[b[1].split(":")[0] + str(i) for i, b in enumerate(BAD)])
def test_a_bad_plugin_block_or_list_is_refused_in_one_line_before_any_job(edit, expected, capsys, tmp_path):
    params = copy.deepcopy(PARAMS)
    edit(params)
    err = refused(capsys, tmp_path, params)
    assert expected in err, err


def test_a_missing_block_takes_its_declared_defaults_and_every_block_is_its_declaration():
    """Each configured method's and runner's block is completed by its declaration's defaults (what every job then
    reads from the resolved file); params.yaml's blocks hold only declared keys."""
    params = copy.deepcopy(PARAMS)
    del _dec(params)["salun"], _cen(params)["cns"]
    filled = check_params(params)
    salun, cns = METHODS["salun"].params, CENTRAL[("cns", "convex")].params
    assert _dec(filled)["salun"] == {k: v["default"] for k, v in salun.items()}
    assert _cen(filled)["cns"]["lissa"] == {k: v["default"] for k, v in cns["lissa"]["properties"].items()}
    for block, keys in ((_dec(PARAMS)[METHODS[m].block], METHODS[m].params) for s in ("client", "sample")
                        for m in _dec(PARAMS)[s]["methods"] if METHODS[m].params):
        assert set(block) <= set(keys)
