# Splits a pip lock (requirements/lock.txt) into two requirement files under `dir` for two pip installs side by side
# (scripts/bootstrap.sh): large.txt, the CUDA libraries, torch and triton (5.3 of the lock's 6.1 GB: unpacking), and
# small.txt, every other package (reading the index). A requirement keeps its hash and comment lines; an option line
# (one starting with "-") goes to both; the header comments before the first requirement go to neither.
# Usage: awk -v dir=DIR -f scripts/split_lock.awk requirements/lock.txt
/^-/ { print > (dir "/large.txt"); print > (dir "/small.txt"); next }
/^[A-Za-z0-9]/ { part = /^(nvidia-|torch==|triton==)/ ? "large" : "small" }
part { print > (dir "/" part ".txt") }
