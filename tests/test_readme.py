"""Every `python -m unlearning` command line in the README's code blocks runs and exits 0 (the certify commands
and checks that need no built data; lines that need the workflow's outputs are left to the pipeline tests)."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
NEEDS_DATA = ("--features", "--split", "--models", "--out-dir", "--out ")  # steps of the workflow, not commands


def readme_commands() -> list[str]:
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(), flags=re.S)
    lines = [line.split("#")[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines
            if line.startswith(".venv/bin/python -m unlearning") and not any(k in line for k in NEEDS_DATA)]


def test_the_readme_has_commands():
    assert len(readme_commands()) >= 8


@pytest.mark.parametrize("line", readme_commands())
def test_readme_command_runs(line):
    args = shlex.split(line)[1:]  # drop .venv/bin/python: run under this interpreter
    run = subprocess.run([sys.executable, *args], cwd=README.parent, capture_output=True, text=True)
    assert run.returncode == 0, f"{line}\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
    assert run.stdout.strip(), f"{line}: printed nothing"
