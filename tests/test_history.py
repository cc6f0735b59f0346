"""Gradient history and checkpoint stores: round trips, float16, atomic writes, bytes read."""

from __future__ import annotations

import pytest
import torch

from unlearning.files import atomic_path
from unlearning.history import CheckpointStore, History, HistoryWriter


def write(tmp_path, dtype, rounds=3):
    gen = torch.Generator().manual_seed(0)
    grads = [torch.randn(4, 11, generator=gen) for _ in range(rounds)]
    mixing = [torch.softmax(torch.randn(4, 4, generator=gen), 1) for _ in range(rounds)]
    writer = HistoryWriter(tmp_path / "h", rounds, [0, 1, 2, 5], 11, dtype)
    for t in range(rounds):
        writer.append(t, grads[t], {"W": mixing[t]})
    writer.close()
    return grads, mixing


def test_float32_round_trip_is_exact(tmp_path):
    grads, mixing = write(tmp_path, "float32")
    history = History(tmp_path / "h")
    assert len(history) == 3 and history.meta["clients"] == [0, 1, 2, 5]
    for t in range(3):
        assert torch.equal(history.grads(t), grads[t])
        torch.testing.assert_close(history.mixing["W"][t], mixing[t].double())
    assert history.bytes_read == 3 * 4 * 11 * 4
    assert torch.equal(history.grads(1, rows=[2]), grads[1][[2]])


def test_float16_halves_the_file_and_keeps_three_digits(tmp_path):
    grads, _ = write(tmp_path, "float16")
    history = History(tmp_path / "h")
    torch.testing.assert_close(history.grads(0), grads[0], atol=2e-3, rtol=1e-3)
    assert history.bytes_read == 4 * 11 * 2


def test_interrupted_history_does_not_look_done(tmp_path):
    writer = HistoryWriter(tmp_path / "h", 3, [0, 1], 5)
    writer.append(0, torch.zeros(2, 5), {"W": torch.eye(2)})
    with pytest.raises(RuntimeError, match="1 of 3 rounds"):
        writer.close()
    assert not (tmp_path / "h" / "grads.npy").exists()
    with pytest.raises(FileNotFoundError, match="meta.json missing"):
        History(tmp_path / "h")


def test_atomic_path_leaves_nothing_on_failure(tmp_path):
    with pytest.raises(ZeroDivisionError):
        with atomic_path(tmp_path / "out.json") as tmp:
            tmp.write_text("half")
            raise ZeroDivisionError
    assert list(tmp_path.iterdir()) == []


def test_checkpoint_store(tmp_path):
    store = CheckpointStore(tmp_path)
    theta = torch.randn(3, 8)
    store.save(10, theta, [0, 2, 4])
    store.save(5, theta * 2, [0, 2, 4])
    assert store.rounds() == [5, 10]
    loaded, clients = store.load(10)
    assert torch.equal(loaded, theta) and clients == [0, 2, 4]
    assert store.bytes_read == store.path(10).stat().st_size
