"""Certified machine unlearning in decentralized learning: a reproducible pipeline."""

__version__ = "0.1.0"
