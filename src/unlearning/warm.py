"""Workflow jobs forked from a warm interpreter, so that none pays torch's import (issue 70).

A small workflow job is mostly interpreter start-up: torch, torch._dynamo and the package take about 3 s of a tiny
job's 4.6 (benchmarks/results/job_start_tiny.json), in each of the hundreds of jobs a run starts. For a local run,
Snakemake starts `serve` once (workflow/rules/common.smk's onstart): it imports all of that, every other module of the
package and every registry (`_import_package`), and forks a copy of itself for every job. A job's command,
`python -m unlearning.warm <args>`, is a client that hands the server its arguments and standard streams, relays
SIGTERM and SIGINT, and exits as the job did (its code, or its signal).

The forked job computes what `python -m unlearning <args>` would: the server only serves a job whose executable,
working directory and environment equal its own (Snakemake's temporary-directory variables aside), so that every
library read its settings at load as the job's own interpreter would have (the CPU code paths of
`unlearning.isa`, the thread counts). Anything else, or no server (a cluster job, `UNLEARNING_WARM=0`), and the
client runs `python -m unlearning <args>` itself, saying why in the job's log when a server was there: the same
bits, a slower start.

One difference stays: Snakemake's `benchmark:` files time the client, so their wall seconds are the job's, but
their memory and CPU-time columns are the client's own.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import socket
import sys
import tempfile
import time
from pathlib import Path

ADDRESS = "UNLEARNING_WARM"  # the server's socket, set for the jobs of a run that has one; "0": never start one
# set by Snakemake for each job (snakemake/shell.py) to the job's threads: the server starts with them at
# `threads`, so it only serves jobs of that many threads (the libraries read them at load)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "GOTO_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS")
# variables that may differ between the server and a job: Snakemake's per-job temporary directory (tempfile
# reads it afresh in the job), the socket's own, and the ones a shell sets for itself
PER_JOB = {"TMPDIR", "TMP", "TEMP", "TEMPDIR", ADDRESS, "_", "PWD", "OLDPWD", "SHLVL"}
RELAYED = (signal.SIGTERM, signal.SIGINT)


# --- the job's side ---

def run(argv: list[str]) -> None:
    """Run `python -m unlearning argv` in a fork of the warm server, else in this process; never returns."""
    address = os.environ.get(ADDRESS, "0")
    if address != "0":
        try:
            conn = _connect(address)
            request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ), "executable": sys.executable}
            socket.send_fds(conn, [json.dumps(request).encode() + b"\n"], [0, 1, 2])
            reply = _line(conn)
        except OSError as err:
            reply = f"no server at {address} ({err.strerror or err})"
        if reply == "started":
            _wait(conn)
        print(f"warm start: {reply}; running python -m unlearning itself", file=sys.stderr, flush=True)
    os.execv(sys.executable, [sys.executable, "-m", "unlearning", *argv])


def _connect(address: str, bind_s: float = 2.0) -> socket.socket:
    """A connection to the server at `address`. Its folder exists from Snakemake's start on (`start`); the socket
    in it from the server's first moments, which a job's own interpreter may beat: wait up to `bind_s` for it."""
    deadline = time.monotonic() + bind_s
    while True:
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(address)
            return conn
        except FileNotFoundError:
            conn.close()
            if time.monotonic() > deadline or not os.path.isdir(os.path.dirname(address)):
                raise
            time.sleep(0.01)


def _line(conn: socket.socket) -> str:
    data = b""
    while not data.endswith(b"\n"):
        chunk = conn.recv(4096)
        if not chunk:
            raise ConnectionResetError("the server closed the connection")
        data += chunk
    return data.decode().strip()


def _wait(conn: socket.socket) -> None:
    """Relay signals to the job until it ends, then end as it did."""
    def relay(signum, frame):
        with contextlib.suppress(OSError):  # the job has ended: its status is on the way
            conn.send(f"{signum}\n".encode())

    for sig in RELAYED:
        signal.signal(sig, relay)
    try:
        status = _line(conn)
    except ConnectionResetError:
        print("warm start: the job's monitor died; the job was killed", file=sys.stderr, flush=True)
        os._exit(1)
    kind, number = status.split()
    if kind == "signal":  # die of it, as a job run in this process would have
        signal.signal(int(number), signal.SIG_DFL)
        os.kill(os.getpid(), int(number))
    os._exit(int(number))


# --- the server's side ---

def start(threads: int) -> str | None:
    """Start a server for this process's jobs (Snakemake's onstart); return its address, set for the jobs."""
    import subprocess

    if os.environ.get(ADDRESS) == "0":
        return None
    address = str(Path(tempfile.mkdtemp(prefix="unlearning-warm-")) / "socket")  # private: mode 0700
    env = {**os.environ, **dict.fromkeys(THREAD_VARIABLES, str(threads))}
    env.pop(ADDRESS, None)
    subprocess.Popen([sys.executable, "-m", "unlearning.warm", "serve", address, str(os.getpid())], env=env,
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)  # stderr: Snakemake's, for its errors
    os.environ[ADDRESS] = address
    return address


def stop() -> None:
    """Ask this process's server to end (Snakemake's onsuccess and onerror); running jobs finish."""
    address = os.environ.pop(ADDRESS, "0")
    if address != "0":
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
                conn.connect(address)
                conn.sendall(b"stop\n")
        except OSError:
            pass  # already gone


def refusal(request: dict, started: dict[str, str]) -> str | None:
    """Why this server, started in the environment `started`, cannot run the request as the job's own interpreter
    would, else None."""
    if request["executable"] != sys.executable:
        return f"the job's Python is {request['executable']}, the server's {sys.executable}"
    if request["cwd"] != os.getcwd():
        return f"the job runs in {request['cwd']}, the server in {os.getcwd()}"
    env = request["env"]
    differ = sorted(k for k in set(env) | set(started) if k not in PER_JOB and env.get(k) != started.get(k))
    if differ:
        return f"the job's environment differs from the server's in {', '.join(differ)}"
    return None


def serve(address: str, starter: int) -> None:
    """Import what the jobs import, then fork one job per connection until told to stop or the starter is gone. The
    socket listens from the start: a job that connects during the imports waits for them (in the listen queue)
    rather than paying them in an interpreter of its own beside the server's. A starter gone during the imports
    (seconds, more on a loaded machine or with a slow plugin) ends the server there, not once they are done."""
    import threading

    started = dict(os.environ)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(address)
    server.listen(64)
    server.settimeout(1.0)
    imported_all = threading.Event()

    def watch() -> None:
        while not imported_all.wait(0.2):
            if os.getppid() != starter:
                _remove(address)
                os._exit(0)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        import torch

        rng_at_import = torch.get_rng_state()
        import torch._dynamo  # noqa: F401  (torch.func's gradients import it on their first call)

        from . import __main__ as cli

        cli._parser()  # every experiment's command line
        _import_package()
        # what those imports set in the environment (torch._dynamo: TORCHINDUCTOR_CACHE_DIR), as in the job
        imported = {k: v for k, v in os.environ.items() if started.get(k) != v}
        imported_all.set()
        watcher.join()  # forks below copy a process of one thread
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # ended monitors are reaped by the kernel
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the jobs; the server ends with Snakemake
        while os.getppid() == starter:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            conn.settimeout(10.0)  # a client that connects and says nothing holds no one up
            fds: list[int] = []
            try:
                with conn:
                    message, fds, _, _ = socket.recv_fds(conn, 1 << 20, 3)
                    while not message.endswith(b"\n") and (chunk := conn.recv(1 << 20)):
                        message += chunk
                    if message == b"stop\n":
                        return
                    request = json.loads(message)
                    if why := refusal(request, started):
                        conn.sendall(f"{why}\n".encode())
                    elif os.fork() == 0:  # the monitor: never back in this loop
                        try:
                            server.close()
                            conn.settimeout(None)
                            request["env"].update(imported)
                            _monitor(conn, fds, request, rng_at_import)
                        finally:
                            os._exit(1)
            except (OSError, ValueError):  # a client killed while it connected: its job never started
                pass
            finally:
                for fd in fds:
                    os.close(fd)
    finally:
        server.close()
        _remove(address)


def _remove(address: str) -> None:
    """The socket, and start()'s private folder once empty."""
    Path(address).unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        Path(address).parent.rmdir()


def _import_package() -> None:
    """Import every module of the package and read every registry: what the steps import inside their functions
    (networkx, scipy, scikit-learn, Opacus, matplotlib: 0.7 s of a tiny job forked after `cli._parser()` alone)
    then costs no job anything. Imports change no computation (no module sets global state as it loads but
    matplotlib's Agg backend, which report/style.py sets in every job that plots). A module or registry that fails
    here is left to the job that reads it, which then meets the error itself."""
    import pkgutil
    from importlib import import_module

    from . import plugins

    skip = {f"{__package__}.__main__", f"{__package__}.warm"}  # imported, and this module (here `__main__`)
    package = import_module(__package__)
    for info in pkgutil.walk_packages(package.__path__, f"{__package__}.", onerror=lambda name: None):
        if info.name not in skip:
            with contextlib.suppress(Exception):
                import_module(info.name)
    for registry in plugins.REGISTRIES:
        with contextlib.suppress(Exception):
            registry.load()


def _monitor(conn: socket.socket, fds: list[int], request: dict, rng_state) -> None:
    """The forked monitor: fork the job, relay the client's signals to it (SIGKILL when the client is gone), send
    back how it ended."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    job = os.fork()
    if job == 0:
        try:
            conn.close()
            _job(fds, request, rng_state)
        finally:
            os._exit(1)
    for fd in fds:
        os.close(fd)
    with contextlib.suppress(OSError):  # else the client is gone: below, the job is killed
        conn.sendall(b"started\n")
    ended = os.pidfd_open(job)
    while True:
        readable, _, _ = select.select([conn, ended], [], [])
        if ended in readable:
            _, status = os.waitpid(job, 0)
            code = os.waitstatus_to_exitcode(status)
            try:
                conn.sendall((f"signal {-code}\n" if code < 0 else f"exit {code}\n").encode())
            except OSError:
                pass  # the client is gone
            os._exit(0)
        try:
            sent = conn.recv(4096)
        except OSError:
            sent = b""
        for signum in sent.split() if sent else [b"9"]:  # no client: nobody waits for the job
            os.kill(job, int(signum))
        if not sent:
            os.waitpid(job, 0)
            os._exit(0)


def _job(fds: list[int], request: dict, rng_state) -> None:
    """The forked job: the client's streams, environment and arguments, then `python -m unlearning`'s main."""
    import atexit

    import torch

    from . import __main__ as cli

    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    for sig in (signal.SIGCHLD, signal.SIGTERM):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.environ.clear()
    os.environ.update(request["env"])
    tempfile.tempdir = None  # the job's TMPDIR
    torch.set_rng_state(rng_state)  # torch's default generator as a fresh interpreter holds it
    sys.argv = [cli.__file__, *request["argv"]]
    code = 1
    try:
        code = cli.main(request["argv"])
    except SystemExit as end:
        code = end.code if isinstance(end.code, int) else (end.code is not None)
        if isinstance(end.code, str):
            print(end.code, file=sys.stderr)
    except BaseException as err:
        sys.excepthook(*sys.exc_info())
        if isinstance(err, KeyboardInterrupt):  # Python ends of the SIGINT it did not handle
            code = -signal.SIGINT
    finally:
        atexit._run_exitfuncs()
        sys.stdout.flush()
        sys.stderr.flush()
        if code < 0:
            signal.signal(-code, signal.SIG_DFL)
            os.kill(os.getpid(), -code)
        os._exit(code)


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve(sys.argv[2], int(sys.argv[3]))
    else:
        run(sys.argv[1:])
