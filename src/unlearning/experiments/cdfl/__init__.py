"""CDFL (Wu et al., 2026): certified unlearning in decentralized FL with Newton/Fisher corrections (the paper's DU)."""
