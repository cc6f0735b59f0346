"""The data layer's error, importable without torch (the command line catches it for every step)."""


class DatasetUnavailable(RuntimeError):
    """The dataset is neither on disk nor downloadable; the message says what to do."""
