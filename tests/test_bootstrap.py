"""scripts/bootstrap.sh's split of the lock into three pip installs side by side (scripts/split_lock.awk): every
requirement of the lock lands in exactly one of them with its hashes, an option line in each; the CUDA libraries
together, torch with triton, the rest apart."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from conftest import ROOT

SPLIT = ROOT / "scripts" / "split_lock.awk"


def split(lock: Path, out: Path) -> dict[str, str]:
    subprocess.run(["awk", "-v", f"dir={out}", "-f", str(SPLIT), str(lock)], check=True)
    return {p.stem: p.read_text() for p in out.glob("*.txt")}


def blocks(text: str) -> list[str]:
    """Each requirement with its continuation lines (hashes, `# via` comments), as written."""
    return re.findall(r"^[A-Za-z0-9][^\n]*\n(?:[ \t][^\n]*\n)*", text, flags=re.M)


def test_the_lock_is_split_whole_with_the_large_wheels_apart(tmp_path):
    lock = (ROOT / "requirements" / "lock.txt").read_text()
    parts = split(ROOT / "requirements" / "lock.txt", tmp_path)
    assert set(parts) == {"cuda", "torch", "rest"}
    assert sorted(b for text in parts.values() for b in blocks(text)) == sorted(blocks(lock))
    names = {part: {b.split("==")[0] for b in blocks(text)} for part, text in parts.items()}
    assert names["torch"] == {"torch", "triton"}
    assert len(names["cuda"]) > 5 and all(n.startswith("nvidia-") for n in names["cuda"])
    assert "torchvision" in names["rest"] and not any(n.startswith("nvidia-") for n in names["rest"])


def test_options_go_to_each_install_and_the_header_to_none(tmp_path):
    lock = tmp_path / "lock.txt"
    lock.write_text("# a header comment\n#    naming torch==9\n\n--extra-index-url https://example.org/simple\n"
                    "numpy==2.0 \\\n    --hash=sha256:aa\n    # via torch\n"
                    "torch==2.14.1 \\\n    --hash=sha256:bb \\\n    --hash=sha256:cc\n    # via -r lock.in\n")
    out = tmp_path / "parts"
    out.mkdir()
    parts = split(lock, out)
    option = "--extra-index-url https://example.org/simple\n"
    assert parts["torch"] == option + "torch==2.14.1 \\\n    --hash=sha256:bb \\\n    --hash=sha256:cc\n" \
        "    # via -r lock.in\n"
    assert parts["rest"] == option + "numpy==2.0 \\\n    --hash=sha256:aa\n    # via torch\n"
    assert parts["cuda"] == option  # no requirement: the bootstrap starts no install for it
