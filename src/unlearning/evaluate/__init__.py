"""Evaluation: utility, forgetting and membership inference."""
