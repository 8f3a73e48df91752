"""Self-play throughput of `colony-zero` on a Ray cluster against local worker processes.

    python -m colony_training.zero.cluster_bench [--generations 3] [--games 32]

Starts a two-node Ray cluster on this machine (Ray's `ray.cluster_utils.Cluster`: a head and a
worker node with one CPU each, both on 127.0.0.1 only, token authentication), runs
`colony-zero --config configs/zero_quickstart.yaml --address ...` on it, then the same run with
two local worker processes, and prints each generation's self-play seconds and the nodes that
played it. Both paths use the machine's two cores, so the comparison shows what Ray costs;
on a real cluster the self-play rate grows with the nodes' CPUs (`workers` = CPUs to use).
"""

from __future__ import annotations

import argparse
import csv
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..cli import console_script

REPO = Path(__file__).resolve().parents[2]
CONFIG = REPO / "configs" / "zero_quickstart.yaml"
NODE = {"num_cpus": 1, "node_ip_address": "127.0.0.1", "object_store_memory": 80 * 1024**2}


def _run(out_dir: Path, name: str, args: argparse.Namespace, extra: list[str]) -> None:
    cmd = [sys.executable, "-m", "colony_training.zero", "--config", str(CONFIG), "--generations", str(args.generations),
           "--games-per-generation", str(args.games), "--parallel-games", str(max(1, args.games // 2)),
           "--eval-every", "0", "--eval-games", "2", "--no-progress", "--out-dir", str(out_dir), "--run-name", name,
           *extra]
    t = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, check=False)
    wall = time.perf_counter() - t
    if proc.returncode != 0:
        raise SystemExit(f"cluster_bench: error: the {name} run failed: {proc.stderr.strip().splitlines()[-1:]}")
    rows = list(csv.DictReader(next(out_dir.glob(f"{name}-*/metrics.csv")).read_text().splitlines()))
    selfplay = [float(r["selfplay_s"]) for r in rows]
    positions = int(rows[-1]["positions"])
    print(f"{name:>6}: self-play s per generation {', '.join(f'{x:.1f}' for x in selfplay)} "
          f"(median {statistics.median(selfplay):.1f}); nodes {', '.join(r['nodes'] for r in rows)}; "
          f"{positions / sum(selfplay):.0f} positions/s in self-play; run wall {wall:.0f} s", flush=True)


@console_script
def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m colony_training.zero.cluster_bench", description=__doc__.split("\n\n")[0])
    p.add_argument("--generations", type=int, default=3)
    p.add_argument("--games", type=int, default=32, help="games per generation (two chunks)")
    args = p.parse_args(argv)
    if args.generations < 1 or args.games < 2:
        p.error("--generations must be >= 1 and --games >= 2")
    # Before Ray is imported: stay on loopback (Linux Ray would use the network address) and require a token.
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"
    os.environ["RAY_AUTH_MODE"] = "token"
    os.environ["RAY_AUTH_TOKEN"] = secrets.token_hex(16)
    from ray._common.utils import reset_ray_address
    from ray.cluster_utils import Cluster

    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores; {args.games} games x "
          f"{args.generations} generations, configs/zero_quickstart.yaml", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        cluster = Cluster(initialize_head=True, head_node_args=dict(NODE, include_dashboard=False))
        reset_ray_address()  # nothing but this bench's driver should find the cluster
        try:
            cluster.add_node(**NODE)
            cluster.wait_for_nodes()
            _run(Path(tmp), "ray", args, ["--address", cluster.address])
        finally:
            cluster.shutdown()
        _run(Path(tmp), "local", args, [])
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
