"""Datasets (torchvision and synthetic), partitions over clients, and forget requests."""
