"""`colony-zero --address` on a two-node Ray cluster, simulated on this machine on loopback only.

The same set-up as `tests/cluster/test_cluster_rllib.py` (Ray's `ray.cluster_utils.Cluster`: a head and a
worker node with 1 CPU each at 127.0.0.1, token authentication), with the search-based trainer:

- the first generation's two self-play chunks run on both nodes (the run's `nodes` column);
- every Ray port of every process involved listens on loopback, and no connection leaves it;
- the worker node is killed after the first generation: the run finishes every generation on the
  head alone, says it lost a node, and its checkpoint plays through `colony-eval`;
- a driver with the wrong token stops with one line and leaves no run directory.

Everything Ray-related runs in a fresh child process (`python tests/cluster/test_cluster_zero.py DIR`),
in its own process group, which the test kills if it overruns.
"""

from __future__ import annotations

import csv
import json
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

from test_cluster_rllib import _sockets, assert_loopback_only, run_scenario_child

SCENARIO_TIMEOUT_S = 420
GENERATIONS = 4
TINY = [  # two chunks of 2 games, a tiny network: a few seconds per generation
    "--channels", "8", "--blocks", "1", "--games-per-generation", "4", "--parallel-games", "2", "--simulations", "4",
    "--max-considered", "4", "--workers", "2", "--max-plies", "60", "--eval-every", "0", "--eval-games", "2",
    "--batch-size", "32", "--keep-checkpoints", "1", "--generations", str(GENERATIONS), "--no-progress",
]  # fmt: skip


def _driver(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    code = "import sys; from colony_training.zero.train import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.Popen([sys.executable, "-c", code, *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


def run_scenario(out: Path) -> None:
    """Start the loopback cluster, run the drivers, record what happened in `out/result.json`."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # before Ray is imported: stay on loopback
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(16)
    os.environ["RAY_gcs_server_port_wait_time_s"] = "3"
    os.environ["RAY_health_check_period_ms"] = "300"  # the head notices the lost node within about a second
    os.environ["RAY_health_check_failure_threshold"] = "2"
    os.environ["RAY_health_check_timeout_ms"] = "300"
    from ray._common.utils import reset_ray_address
    from ray.cluster_utils import Cluster

    result: dict = {}
    node = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "object_store_memory": 80 * 1024**2}
    cluster = Cluster(initialize_head=True, head_node_args=dict(node, include_dashboard=False))
    reset_ray_address()  # drivers get --address; nothing else should find this cluster
    try:
        worker = cluster.add_node(**node)
        cluster.wait_for_nodes()
        env = dict(os.environ)
        runs = out / "runs"
        driver = _driver(["--address", cluster.address, "--out-dir", str(runs), "--run-name", "cluster", *TINY], env)
        deadline = time.monotonic() + SCENARIO_TIMEOUT_S / 2
        while driver.poll() is None and time.monotonic() < deadline:
            metrics = list(runs.glob("cluster-*/metrics.csv"))
            if metrics and len(metrics[0].read_text().splitlines()) >= 2:  # the header and generation 0
                result["sockets"] = _sockets(os.getpid())  # the driver and both nodes are up now
                cluster.remove_node(worker, allow_graceful=False)
                result["killed"] = True
                break
            time.sleep(0.1)
        stdout, stderr = driver.communicate(timeout=SCENARIO_TIMEOUT_S / 2)
        result["run"] = {"rc": driver.returncode, "stdout": stdout, "stderr": stderr[-4000:]}
        wrong = _driver(["--address", cluster.address, "--out-dir", str(out / "wrong"), *TINY],
                        {**env, "RAY_AUTH_TOKEN": secrets.token_hex(16)})
        stdout, stderr = wrong.communicate(timeout=120)
        result["wrong_token"] = {"rc": wrong.returncode, "stdout": stdout, "stderr": stderr}
    finally:
        cluster.shutdown()
    (out / "result.json").write_text(json.dumps(result))


def test_zero_self_play_on_a_two_node_loopback_cluster_survives_a_lost_node(tmp_path):
    result = run_scenario_child(__file__, tmp_path, SCENARIO_TIMEOUT_S)
    assert result.get("killed"), result["run"]["stderr"]
    assert_loopback_only(result["sockets"])

    run = result["run"]
    assert run["rc"] == 0, run["stderr"]
    run_dir = next((tmp_path / "runs").glob("cluster-*"))
    rows = list(csv.DictReader((run_dir / "metrics.csv").read_text().splitlines()))
    assert [int(r["generation"]) for r in rows] == list(range(GENERATIONS))
    assert int(rows[0]["nodes"]) == 2  # both nodes played the first generation
    assert int(rows[-1]["nodes"]) == 1  # the head alone after the worker node was lost
    assert all(int(r["games"]) == 4 * (i + 1) for i, r in enumerate(rows))  # no game lost with the node
    assert "lost 1 of 2 Ray nodes" in run["stderr"]
    latest = run_dir / "checkpoints" / "latest.pt"

    from colony_training.eval.evaluate import main as eval_main

    assert eval_main([f"checkpoint:{latest}:az:4", "random", "--games", "2", "--workers", "1", "--max-plies", "30",
                      "--no-progress", "--no-records", "--out", str(tmp_path / "eval")]) == 0

    r = result["wrong_token"]
    lines = r["stderr"].strip().splitlines()
    assert r["rc"] == 2 and len(lines) == 1, r["stderr"][-2000:]
    assert lines[0].startswith("colony-zero: error: ") and "authentication" in lines[0]
    assert not (tmp_path / "wrong").exists()


if __name__ == "__main__":
    run_scenario(Path(sys.argv[1]))
