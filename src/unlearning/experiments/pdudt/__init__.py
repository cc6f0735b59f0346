"""PDUDT (Qiao et al., ICML 2025): provable decentralized unlearning under dynamic topologies."""
