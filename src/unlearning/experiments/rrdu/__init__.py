"""RR-DU (Lamri & Maniatakos, 2025): fully decentralized certified unlearning by a randomized-restart token walk."""
