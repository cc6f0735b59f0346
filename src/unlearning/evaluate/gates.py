"""Sample-count gates of the evaluation, importable without torch (reports read them)."""

GATE_MIN = 1000  # 2s below this: the accuracy's 95 % interval is wider than +-3 points; report it, do not gate
