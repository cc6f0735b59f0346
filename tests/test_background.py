"""conftest's background runs (the quick regression's workflow is one): started as the session begins only where a
selected test reads them, at a lower priority, and read by tests that run after every other test."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import conftest

CALLS: list[str] = []


def _start(name: str):
    def start(folder: Path):
        CALLS.append(name)
        proc = subprocess.Popen([*conftest.LOWER_PRIORITY, sys.executable, "-c", "import os; print(os.nice(0))"],
                                stdout=(folder / "out").open("w"))
        return proc, folder
    return start


conftest.BACKGROUND["a_background_run"] = _start("a_background_run")
conftest.BACKGROUND["an_unread_run"] = _start("an_unread_run")  # no test reads it


@pytest.fixture(scope="module")
def a_background_run():
    run = conftest.started("a_background_run")
    assert run is not None, "not started as the session began"
    proc, folder = run
    assert proc.wait() == 0
    return folder


def test_a_read_run_starts_with_the_session_at_a_lower_priority_and_an_unread_one_never(a_background_run):
    assert CALLS == ["a_background_run"]
    assert int((a_background_run / "out").read_text()) >= 10  # its niceness


def test_the_tests_that_read_a_background_run_come_after_every_other_and_the_dense_ones_before_them(
        request, a_background_run):
    order = [(bool(conftest.BACKGROUND.keys() & set(item.fixturenames)), item.get_closest_marker("dense") is not None)
             for item in request.session.items]
    assert order == sorted(order)
