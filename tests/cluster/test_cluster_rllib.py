"""`colony-train-rllib` on a two-node Ray cluster, simulated on this machine on loopback only.

Ray's own multi-node test utility (`ray.cluster_utils.Cluster`) starts a head and a worker node,
each with 1 CPU, both at 127.0.0.1, with token authentication. A driver joins it as a user's
`colony-train-rllib --address HOST:PORT` would (a separate process), and the test checks:

- the two env runners land on both nodes (the run's `nodes` column);
- every Ray port of every process involved listens on loopback, and no connection leaves it;
- the worker node is killed mid-run: the run finishes with the head's runner alone and says
  how many env runners it lost; the export of its last checkpoint plays through `colony-eval`;
- a driver with the wrong token, and one with another Ray version, stop with one line naming
  the cause, and leave no run directory behind.

Everything Ray-related runs in a fresh child process (`python tests/cluster/test_cluster_rllib.py
SCENARIO_DIR`), so that the environment Ray reads at import (loopback, authentication) is set
before Ray is imported and nothing of the cluster outlives the test: the child runs in its own
process group, which the test kills if the child overruns its time.
"""

from __future__ import annotations

import csv
import ipaddress
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "rllib_ppo.yaml"
SCENARIO_TIMEOUT_S = 420  # the scenario takes ~1-2 minutes on 2 busy cores
KILL_AT_ITERATION = 2
ITERATIONS = 6
TINY = [  # two 1-CPU env runners, tiny batches and network: a few seconds per iteration
    "--num-env-runners", "2", "--num-envs-per-env-runner", "1", "--train-batch-size", "32", "--minibatch-size", "32", "--update-epochs", "1",
    "--total-steps", str(32 * ITERATIONS), "--max-plies", "16", "--channels", "8", "--blocks", "1",
    "--checkpoint-every", "1", "--keep-checkpoints", "1", "--final-eval-games", "0", "--no-progress",
]  # fmt: skip


# --- the scenario, run in a child process ----------------------------------------------------------
def _is_loopback(ip: str) -> bool:
    addr = ipaddress.ip_address(ip.split("%")[0])
    mapped = getattr(addr, "ipv4_mapped", None)
    return (mapped or addr).is_loopback


def _sockets(root_pid: int) -> dict[str, list[str]]:
    """Listening and connected inet sockets of `root_pid` and all its descendants."""
    import psutil

    root = psutil.Process(root_pid)
    listen, remote = [], []
    for proc in [root, *root.children(recursive=True)]:
        try:
            conns = proc.net_connections(kind="inet")
            name = proc.name()
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue
        for c in conns:
            if c.status == psutil.CONN_LISTEN:
                listen.append(f"{name} {c.laddr.ip}:{c.laddr.port}")
            elif c.raddr:
                remote.append(f"{name} {c.raddr.ip}:{c.raddr.port}")
    return {"listen": listen, "remote": remote}


def _driver(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    code = "import sys; from colony_training.rllib.selfplay import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def run_scenario(out: Path) -> None:
    """Start the loopback cluster, run the drivers, record what happened in `out/result.json`."""
    # Before Ray is imported: keep every address on loopback (on Linux Ray otherwise replaces
    # 127.0.0.1 by the machine's network address), and require a token of every process.
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(16)
    os.environ["RAY_gcs_server_port_wait_time_s"] = "3"  # a refused driver gives up after ~3 s, not 20
    from ray.cluster_utils import Cluster

    result: dict = {}
    node = dict(num_cpus=1, node_ip_address="127.0.0.1", object_store_memory=80 * 1024**2)
    cluster = Cluster(initialize_head=True, head_node_args=dict(node, include_dashboard=False))
    # Cluster writes its address to /tmp/ray/ray_current_cluster, where a plain `ray.init()` of
    # another test running meanwhile would find it and join; the drivers here get --address.
    from ray._common.utils import reset_ray_address

    reset_ray_address()
    try:
        worker = cluster.add_node(**node)
        cluster.wait_for_nodes()
        result["address"] = cluster.address
        env = dict(os.environ)
        run_dir = out / "run"
        driver = _driver(["--config", str(CONFIG), "--address", cluster.address, "--run-dir", str(run_dir), *TINY],
                         env)
        metrics = run_dir / "metrics.csv"
        deadline = time.monotonic() + SCENARIO_TIMEOUT_S / 2
        while driver.poll() is None and time.monotonic() < deadline:
            rows = list(csv.DictReader(open(metrics))) if metrics.is_file() else []
            if len(rows) >= KILL_AT_ITERATION:
                result["sockets"] = _sockets(os.getpid())  # the driver and both nodes are up now
                cluster.remove_node(worker, allow_graceful=False)
                result["killed_after_iteration"] = len(rows)
                break
            time.sleep(0.2)
        stdout, stderr = driver.communicate(timeout=SCENARIO_TIMEOUT_S / 2)
        result["run"] = {"rc": driver.returncode, "stdout": stdout, "stderr": stderr[-3000:]}

        # A driver with the wrong token, and one that is not the cluster's Ray version.
        wrong = _driver(["--config", str(CONFIG), "--address", cluster.address, "--out-dir", str(out / "wrong"),
                         *TINY], {**env, "RAY_AUTH_TOKEN": secrets.token_hex(16)})
        other = subprocess.Popen(
            [sys.executable, "-c", "import sys, ray; ray.__version__ = '0.0.1'; from colony_training.rllib.selfplay import "
             "main; sys.exit(main(sys.argv[1:]))", "--config", str(CONFIG), "--address", cluster.address,
             "--out-dir", str(out / "other"), *TINY], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for name, proc in (("wrong_token", wrong), ("other_version", other)):
            stdout, stderr = proc.communicate(timeout=120)
            result[name] = {"rc": proc.returncode, "stdout": stdout, "stderr": stderr}
    finally:
        cluster.shutdown()
    (out / "result.json").write_text(json.dumps(result))


# --- the test ----------------------------------------------------------------------------------------
def run_scenario_child(script: str, out: Path, timeout_s: float) -> dict:
    """Run `python SCRIPT OUT` in its own process group (killed whole if it overruns); its result.json."""
    proc = subprocess.Popen([sys.executable, script, str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        log, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)  # the scenario, its nodes and drivers: nothing outlives the test
        log, _ = proc.communicate()
        raise AssertionError(f"the cluster scenario overran {timeout_s} s; its log ends:\n{log[-3000:]}") from None
    assert proc.returncode == 0, log[-5000:]
    return json.loads((out / "result.json").read_text())


def assert_loopback_only(sockets: dict[str, list[str]]) -> None:
    """Every listening port and every connection of the cluster and the driver is on loopback."""
    assert sockets["listen"], "no listening socket found: the check would pass vacuously"
    assert [s for s in sockets["listen"] if not _is_loopback(s.split()[-1].rsplit(":", 1)[0])] == []
    assert [s for s in sockets["remote"] if not _is_loopback(s.split()[-1].rsplit(":", 1)[0])] == []


def test_two_node_loopback_cluster_run_survives_a_lost_node(tmp_path):
    result = run_scenario_child(__file__, tmp_path, SCENARIO_TIMEOUT_S)
    assert_loopback_only(result["sockets"])

    # The run used both nodes, lost the worker node's runner, and finished every iteration.
    run = result["run"]
    assert run["rc"] == 0, run["stderr"]
    rows = list(csv.DictReader(open(tmp_path / "run" / "metrics.csv")))
    assert [int(r["iteration"]) for r in rows] == list(range(1, ITERATIONS + 1))
    assert int(rows[0]["nodes"]) == 2 and int(rows[0]["env_runners"]) == 2
    assert int(rows[-1]["nodes"]) == 1 and int(rows[-1]["env_runners"]) == 1
    assert int(rows[-1]["env_steps"]) > int(rows[result["killed_after_iteration"] - 1]["env_steps"])
    assert "lost 1 of 2 env runners" in run["stdout"]
    latest = tmp_path / "run" / "checkpoints" / "latest.pt"
    assert f"exported checkpoint: {latest}" in run["stdout"]

    # The export of the cluster run plays through colony-eval.
    from colony_training.eval.evaluate import main as eval_main

    assert eval_main([f"checkpoint:{latest}", "random", "--games", "2", "--workers", "1", "--max-plies", "30",
                      "--no-progress", "--no-records", "--out", str(tmp_path / "eval")]) == 0

    # Refused drivers: one line naming the cause, exit code 2, no run directory left behind.
    for name, cause in (("wrong_token", "authentication"), ("other_version", "version")):
        r = result[name]
        lines = r["stderr"].strip().splitlines()
        assert r["rc"] == 2 and len(lines) == 1, r["stderr"][-2000:]
        assert lines[0].startswith("colony-train-rllib: error: ") and cause in lines[0]
    assert not (tmp_path / "wrong").exists() and not (tmp_path / "other").exists()


if __name__ == "__main__":
    run_scenario(Path(sys.argv[1]))
