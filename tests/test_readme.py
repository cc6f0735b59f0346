"""The README and docs/: every `python -m unlearning` command line in their code blocks runs and exits 0 (the
certify commands and checks that need no built data; lines that need the workflow's outputs are left to the
pipeline tests), every relative link resolves, the README's first screen holds the two commands and the table of
papers, and that table equals what `papers-table` computes from the recorded runs."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
NEEDS_DATA = ("--features", "--split", "--models", "--out-dir", "--out ")  # steps of the workflow, not commands
TWO_COMMANDS = ("bash scripts/bootstrap.sh && .venv/bin/snakemake --cores all",
                "bash scripts/bootstrap.sh && .venv/bin/pytest")


def commands() -> list[str]:
    blocks = [b for page in PAGES for b in re.findall(r"```bash\n(.*?)```", page.read_text(), flags=re.S)]
    lines = [line.split("#")[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines
            if line.startswith(".venv/bin/python -m unlearning") and not any(k in line for k in NEEDS_DATA)]


def test_the_pages_have_commands():
    assert len(commands()) >= 8


@pytest.mark.slow  # runs the documentation's commands (12 s in all): the full suite's, not the edit loop's
@pytest.mark.parametrize("line", commands())
def test_command_runs(line):
    args = shlex.split(line)[1:]  # drop .venv/bin/python: run under this interpreter
    run = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, f"{line}\n{run.stdout[-2000:]}\n{run.stderr[-2000:]}"
    assert run.stdout.strip(), f"{line}: printed nothing"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_relative_link_resolves(page):
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", page.read_text())
    local = [link for link in links if not re.match(r"[a-z]+://|mailto:", link)]
    broken = [link for link in local if not (page.parent / link).exists()]
    assert not broken, f"{page.name}: links that resolve to nothing: {broken}"


def test_the_first_screen_holds_the_two_commands_and_the_table_of_papers():
    first = "\n".join(README.read_text().splitlines()[:60])
    assert all(c in first for c in TWO_COMMANDS)
    assert "<!-- papers-table -->" in first and "<!-- /papers-table -->" in first
    assert "](docs/front_page.png)" in first  # what the first command builds, as a picture (issue 40, item 5)
    assert (ROOT / ".ci" / "run").read_text().strip().endswith(TWO_COMMANDS[1])  # CI runs the README's test command


def test_the_table_of_papers_is_the_records():
    from unlearning.experiments.common.records import papers_table

    shown = README.read_text().split("<!-- papers-table -->\n", 1)[1].split("\n<!-- /papers-table -->", 1)[0]
    assert shown == papers_table(ROOT), "the README's table drifted: paste `python -m unlearning papers-table`"


def test_the_table_of_measured_runs_is_benchmarks_results():
    """issue 70 item 5: docs/running.md's table of measured runs is generated from benchmarks/results/runs.json."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("runs_table", ROOT / "benchmarks" / "runs_table.py")
    runs = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runs)
    page = (ROOT / "docs" / "running.md").read_text()
    shown = page.split("<!-- runs-table -->\n", 1)[1].split("\n<!-- /runs-table -->", 1)[0]
    assert shown == runs.table(), "docs/running.md's table drifted: paste `python benchmarks/runs_table.py`"
