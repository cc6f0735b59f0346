"""One figure style for every report, and the one way a figure is saved (atomic, reproducible bytes)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

from ..files import atomic_path  # noqa: E402


def apply() -> None:
    """Seaborn's white grid; call before drawing."""
    sns.set_theme(style="whitegrid")


def save(fig, path: str | Path) -> None:
    """Tight layout, PNG at 110 dpi without the software stamp, written atomically; the figure is closed."""
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, metadata={"Software": None})
    plt.close(fig)
