"""Noise calibration and accounting: Gaussian mechanism, PDUDT's Theorem 4.9 bound."""
