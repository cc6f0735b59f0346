"""The README's table of papers: per paper, its page in docs/, what runs offline, its main recorded run under
reports/recorded/ and that run's cell counts and headline verdict as its own report's `summary` computes them
(the front page's row),
so the README cannot drift from the records. `python -m unlearning papers-table` prints it; a test compares."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

from ...report.compare import COUNTED

# section -> (title, what runs offline, main record folder under reports/recorded/, what that record is)
PAPERS_TABLE = {
    "pdudt": ("PDUDT (Qiao et al., ICML 2025)", "Fashion-MNIST; MNIST's rows on real MNIST, a 5,000-digit subset; "
              "CIFAR-10, SVHN need a network",
              "pdudt_fashion_mnist", "paper sizes, MLP, CPU"),
    "sglu": ("SGLU (Chien et al., 2024)", "Table 3 and Fig. 3b/3d (accounting) in full; Fig. 3a/3c on a "
             "Fashion-MNIST stand-in and on real MNIST, a 5,000-digit subset", "sglu_fashion_mnist",
             "paper sizes, CPU"),
    "cdfl": ("CDFL (Wu et al., 2026)", "the Fashion-MNIST column; MNIST's on real MNIST, a 5,000-digit subset; "
             "CIFAR-10 needs a network",
             "cdfl_fashion_mnist_fresh_h200", "paper sizes, 3 seeds: 0 on a CPU, 1-2 on an H200"),
    "r2d": ("Rewind-to-Delete (Mu & Klabjan, 2025)", "three stand-ins; eICU and Lacuna-100 need credentials",
            "r2d_stand_ins", "paper's MLP and schedule, CPU"),
    "rrdu": ("RR-DU (Lamri & Maniatakos, 2025)", "a Fashion-MNIST stand-in for MNIST; MNIST's column on real "
             "MNIST, a 5,000-digit subset; CIFAR-10 needs a network", "rrdu_fashion_mnist", "paper sizes, CPU"),
    "common_ground": ("Common ground (every method, one task, an audited certificate)", "Fashion-MNIST",
                      "common_ground", "paper sizes, 3 seeds, CPU"),
}


def papers_table(root: str | Path = ".") -> str:
    """The Markdown table, the counts read from each record's tables by its report's `summary`."""
    root = Path(root)
    head = ["paper", "runs offline", "recorded run", *COUNTED, "headline claim holds there"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 3 + "---:|" * len(COUNTED) + "---|"]
    for section, (title, offline, folder, what) in PAPERS_TABLE.items():
        record = root / "reports" / "recorded" / folder
        s = import_module(f"..{section}.report", __package__).summary(record)
        lines.append(f"| [{title}](docs/{section}.md) | {offline} | [{folder}](reports/recorded/{folder}/) ({what}) | "
                     + " | ".join(str(s.counts.get(k, 0)) for k in COUNTED) + f" | {s.holds} |")
    return "\n".join(lines)
