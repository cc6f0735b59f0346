"""Common ground (issue 16): the methods of every paper on one task and budget, with an empirical audit of each
certificate. Built so far: the centralized setting on the convex model (centralized.py)."""
