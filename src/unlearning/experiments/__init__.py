"""One package per paper: its steps, its report and its CLI commands (`cli.add_commands`, `cli.run`).

`__main__` discovers the packages named in EXPERIMENTS; everything outside `experiments/` is shared and
names no paper.
"""

EXPERIMENTS = ("spine", "pdudt", "sglu")
