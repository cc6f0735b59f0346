"""Writes tests/config/tiny.yaml from params.yaml: `.venv/bin/python tests/config/make_tiny.py`."""

import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from conftest import ROOT, tiny_params  # noqa: E402

HEADER = ("# The tiny test configuration: a synthetic dataset, 4 clients, 3 rounds; the test suite runs the\n"
          "# whole workflow with it once (tests/conftest.py's tiny_run) and parts of it again to check determinism.\n"
          "# Generated from params.yaml by tests/config/make_tiny.py; do not edit by hand.\n")


def tiny_config() -> dict:
    params = tiny_params(yaml.safe_load((ROOT / "params.yaml").read_text()))
    params["spine"]["paper"] = {}
    params["pdudt"]["paper"] = {}
    params["sglu"]["paper"] = {}
    params["rrdu"]["paper"] = {}
    return params


if __name__ == "__main__":
    (HERE / "tiny.yaml").write_text(HEADER + yaml.safe_dump(tiny_config(), sort_keys=False))
