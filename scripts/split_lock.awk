# Splits a pip lock (requirements/lock.txt) into three requirement files under `dir`, for three pip installs side by
# side (scripts/bootstrap.sh): cuda.txt, the CUDA libraries (3.2 of the lock's 6.1 GB), torch.txt, torch and triton
# (2.1 GB), both mostly unpacking, and rest.txt, every other package (mostly reading the index). A requirement keeps
# its hash and comment lines; an option line (one starting with "-") goes to each file; the header comments before the
# first requirement go to none. Usage: awk -v dir=DIR -f scripts/split_lock.awk requirements/lock.txt
/^-/ { for (p in parts) print > (dir "/" p ".txt"); next }
/^[A-Za-z0-9]/ { part = /^nvidia-/ ? "cuda" : /^(torch|triton)==/ ? "torch" : "rest" }
part { print > (dir "/" part ".txt") }
BEGIN { parts["cuda"]; parts["torch"]; parts["rest"] }
