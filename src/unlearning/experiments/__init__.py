"""One package per paper: its steps, its report (with `summary` for the front page) and its CLI commands
(`cli.add_commands`); `common` holds what several of them share and the front page's command.

`__main__` discovers the packages named in EXPERIMENTS; everything outside `experiments/` is shared and
names no paper.
"""

PAPERS = ("spine", "pdudt", "sglu", "cdfl", "r2d", "rrdu")  # in the front page's order
SECTIONS = (*PAPERS, "common_ground")  # the front page's rows: the papers, then the comparison across them
EXPERIMENTS = (*SECTIONS, "common")
