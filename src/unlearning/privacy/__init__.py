"""Noise calibration and accounting: the Gaussian mechanism, each method's bound or accounting."""
