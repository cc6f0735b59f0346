"""Common ground (issue 16): the methods of every paper on one task and budget, with an empirical audit of each
certificate: the centralized settings (centralized.py: the convex model; mlp.py: an MLP; each method's runner in
its module of methods/), the decentralized client and sample settings (decentralized.py), and the report
(report.py)."""

from ...config import section_config


def config(params: dict) -> dict:
    """The params section `common` with its scale override merged in."""
    return section_config(params, "common")
