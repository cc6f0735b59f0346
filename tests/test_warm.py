"""Jobs forked from a warm interpreter (unlearning/warm.py): the same output, exit status and signals as
`python -m unlearning`, a refusal where the job's interpreter would differ, and no job left behind by a killed
client. The whole workflow runs through it in every workflow test (common.smk's PY); test_slurm compares such a run
byte for byte with cluster jobs, which start their own interpreters."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT
from test_crash_safety import _parent_map, alive  # processes, from /proc
from unlearning import warm

TINY = ROOT / "tests" / "config" / "tiny.yaml"


def children(pid: int) -> list[int]:
    return [p for p, parent in _parent_map().items() if parent == pid]


def wait_until(condition, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A server as Snakemake's onstart starts one (one thread a job), in a folder of its own; yields (address,
    folder, the environment of a job it serves, its process)."""
    folder = tmp_path_factory.mktemp("warm")
    address = str(folder / "socket")
    env = {**os.environ, **dict.fromkeys(warm.THREAD_VARIABLES, "1")}
    env.pop(warm.ADDRESS, None)
    proc = subprocess.Popen([sys.executable, "-m", "unlearning.warm", "serve", address, str(os.getpid())],
                            cwd=folder, env=env)
    wait_until(lambda: os.path.exists(address) or proc.poll() is not None)
    yield address, folder, {**env, warm.ADDRESS: address}, proc
    proc.kill()


def job(args: list[str], cwd: Path, env: dict, module: str = "unlearning.warm", **kw) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", module, *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kw)


@pytest.mark.slow
def test_a_served_step_writes_the_bytes_and_the_output_of_its_own_interpreter(server, tmp_path):
    _, folder, env, proc = server
    args = ["--params", str(TINY), "--threads", "1", "prepare", "--dataset", "synthetic", "--out"]
    served = job([*args, str(folder / "served.safetensors")], folder, env)
    own = job([*args, str(folder / "own.safetensors")], folder, {**env, warm.ADDRESS: "0"})
    (out, err), (own_out, own_err) = served.communicate(timeout=120), own.communicate(timeout=120)
    assert served.returncode == own.returncode == 0, err + own_err
    assert "warm start" not in err and "warm start" not in own_err
    assert out == own_out
    wait_until(lambda: not children(proc.pid), timeout_s=10)  # its monitor ends as the client does
    assert (folder / "served.safetensors").read_bytes() == (folder / "own.safetensors").read_bytes()


@pytest.mark.slow
def test_a_failing_step_ends_with_its_code_and_message(server, tmp_path):
    _, folder, env, _ = server
    bad = folder / "bad.yaml"
    bad.write_text(TINY.read_text().replace("scale: ", "scale: huge #", 1))
    # main's code 2 (a known error), then argparse's SystemExit(2)
    for args in (["--params", str(bad), "check-params"], ["--params", str(TINY), "no-such-step"]):
        served, own = job(args, folder, env), job(args, folder, env, module="unlearning")
        (_, err), (_, own_err) = served.communicate(timeout=120), own.communicate(timeout=120)
        assert served.returncode == own.returncode == 2
        assert err == own_err and ("scale" in err or "no-such-step" in err)


@pytest.mark.slow
def test_a_job_whose_environment_differs_runs_in_its_own_interpreter_and_says_why(server):
    _, folder, env, _ = server
    served = job(["--params", str(TINY), "check-params"], folder, {**env, "OMP_NUM_THREADS": "2"})
    out, err = served.communicate(timeout=120)
    assert served.returncode == 0 and "valid" in out
    assert "warm start: the job's environment differs from the server's in OMP_NUM_THREADS" in err


@pytest.mark.slow
def test_a_client_that_hangs_up_unheard_leaves_the_server_serving(server):
    address, folder, env, _ = server
    for said in (b"", b"not a request\n"):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as hung_up:
            hung_up.connect(address)
            hung_up.sendall(said)
    served = job(["--params", str(TINY), "check-params"], folder, env)
    out, err = served.communicate(timeout=120)
    assert served.returncode == 0 and "valid" in out and "warm start" not in err, err


@pytest.mark.slow
def test_without_a_server_the_client_runs_the_step_itself(tmp_path):
    env = {**os.environ, warm.ADDRESS: str(tmp_path / "none")}
    served = job(["--params", str(TINY), "check-params"], tmp_path, env)
    out, err = served.communicate(timeout=120)
    assert served.returncode == 0 and "valid" in out and "no server at" in err


def grandchildren(pid: int) -> list[int]:
    return [c for m in children(pid) for c in children(m)]


def blocked_job(server, tmp_path, request) -> tuple[subprocess.Popen, int]:
    """A served job blocked reading a part to combine from a FIFO nobody writes, and the pid of the forked job; its
    client is killed after the test, whatever the test's end (its monitor then kills the job)."""
    _, folder, env, proc = server
    os.mkfifo(tmp_path / "part.json")
    (tmp_path / "timing.json").write_text("{}")
    client = job(["--params", str(TINY), "common-central", "centralized", "--parts", str(tmp_path / "part.json"),
                  "--part-timings", str(tmp_path / "timing.json"), "--out", str(tmp_path / "out.json"), "--timing",
                  str(tmp_path / "out_timing.json")], folder, env)
    request.addfinalizer(client.kill)
    writer: list[int] = []

    def reading() -> bool:  # the job has opened the FIFO (opening its writing end succeeds), and waits in read()
        try:
            writer.append(os.open(tmp_path / "part.json", os.O_WRONLY | os.O_NONBLOCK))
        except OSError:  # ENXIO: no reader yet
            return False
        return True

    wait_until(reading)
    (job_pid,) = grandchildren(proc.pid)  # the server's monitor, and its job
    return client, job_pid


@pytest.mark.slow
def test_a_killed_client_leaves_no_job_behind(server, tmp_path, request):
    client, pid = blocked_job(server, tmp_path, request)
    client.kill()
    client.wait(timeout=10)
    wait_until(lambda: not alive(pid), timeout_s=10)
    wait_until(lambda: not children(server[3].pid), timeout_s=10)


@pytest.mark.slow
def test_sigterm_reaches_the_job_and_the_client_dies_of_it(server, tmp_path, request):
    client, pid = blocked_job(server, tmp_path, request)
    client.terminate()
    assert client.wait(timeout=10) == -signal.SIGTERM
    assert not alive(pid)


@pytest.mark.slow
def test_sigint_interrupts_the_job_where_it_is_as_in_its_own_interpreter(server, tmp_path, request):
    client, pid = blocked_job(server, tmp_path, request)
    client.send_signal(signal.SIGINT)
    _, err = client.communicate(timeout=10)
    assert client.returncode == -signal.SIGINT, err
    # the job's traceback, where it waited; not the client's
    assert "KeyboardInterrupt" in err and "unlearning/files.py" in err and "in _line" not in err, err


@pytest.mark.slow
def test_the_server_ends_when_stopped_or_when_its_starter_is_gone(tmp_path):
    """Stopped (its starter alive); its starter killed while it imports (held there by an installed plugin whose
    module takes a minute to import); its starter killed while it serves (once it has answered a request)."""
    env = {k: v for k, v in os.environ.items() if k != warm.ADDRESS}
    starts = "import os, time\nfrom unlearning import warm\na = warm.start(1)\nprint(a, flush=True)\n"
    # the starter lives on until the server's private folder is gone: removed on the way out
    stopped = subprocess.run([sys.executable, "-c", starts + "while not os.path.exists(a): time.sleep(0.05)\n"
                              "warm.stop()\nwhile os.path.exists(os.path.dirname(a)): time.sleep(0.05)\n"],
                             env=env, capture_output=True, text=True, timeout=120)
    assert stopped.returncode == 0, stopped.stderr

    slow = tmp_path / "slow"
    (slow / "slow_plugin-0.dist-info").mkdir(parents=True)
    (slow / "slow_plugin-0.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: slow-plugin\nVersion: 0\n")
    (slow / "slow_plugin-0.dist-info" / "entry_points.txt").write_text("[unlearning.methods]\nslow = slow_plugin\n")
    (slow / "slow_plugin.py").write_text("import time\ntime.sleep(60)\n")
    with_slow_plugin = {**env, "PYTHONPATH": os.pathsep.join(filter(None, [str(slow), env.get("PYTHONPATH")]))}
    for env_of_starter, ready in [(with_slow_plugin, Path.exists), (env, answers)]:
        starter = subprocess.Popen([sys.executable, "-c", starts + "time.sleep(120)"], env=env_of_starter,
                                   stdout=subprocess.PIPE, text=True)
        address = Path(starter.stdout.readline().strip())
        wait_until(lambda a=address, ready=ready: ready(a))
        (server,) = children(starter.pid)
        starter.kill()
        starter.wait()
        wait_until(lambda s=server: not alive(s), timeout_s=10)
        assert not address.parent.exists()


def answers(address: Path) -> bool:
    """Whether the server at `address` has answered a request (a refused one: it is past its imports)."""
    if not address.exists():
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
        conn.settimeout(120)  # its imports, on a loaded machine
        conn.connect(str(address))
        conn.sendall(json.dumps({"executable": "not-python", "argv": [], "cwd": "/", "env": {}}).encode() + b"\n")
        return "not-python" in conn.makefile().readline()


@pytest.mark.slow
def test_a_job_started_with_its_server_is_served_once_the_server_has_imported(tmp_path):
    """Snakemake starts its first jobs right after onstart's `start`, before the server has bound its socket and
    while it imports torch and the package (seconds): those jobs wait for it rather than each paying the imports
    in an interpreter of its own beside it."""
    env = {**{k: v for k, v in os.environ.items() if k != warm.ADDRESS}, **dict.fromkeys(warm.THREAD_VARIABLES, "1")}
    starter = ("import subprocess, sys\nfrom unlearning import warm\nwarm.start(1)\n"
               f"job = subprocess.run([sys.executable, '-m', 'unlearning.warm', '--params', {str(TINY)!r}, "
               "'check-params'], capture_output=True, text=True)\n"
               "warm.stop()\nprint(job.returncode, job.stderr)")
    done = subprocess.run([sys.executable, "-c", starter], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("0 ") and "warm start" not in done.stdout, done.stdout


def test_refusal_names_what_differs_and_ignores_what_snakemake_sets_per_job():
    started = {**os.environ, "OMP_NUM_THREADS": "1"}
    request = {"executable": sys.executable, "cwd": os.getcwd(),
               "env": {**started, "TMPDIR": "/elsewhere", warm.ADDRESS: "/a/socket"}}
    assert warm.refusal(request, started) is None
    request["env"]["GLIBC_TUNABLES"] = "glibc.cpu.hwcaps=-AVX2"
    assert "GLIBC_TUNABLES" in warm.refusal(request, started)
    assert "/usr/bin/python0" in warm.refusal({**request, "executable": "/usr/bin/python0"}, started)
    assert "/nowhere" in warm.refusal({**request, "cwd": "/nowhere"}, started)
