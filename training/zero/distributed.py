"""`colony-zero --address HOST:PORT`: self-play on the CPUs of a Ray cluster.

Each generation's games are split into `workers` chunks, as on one machine; with an address
each chunk is a Ray task (one CPU) that may run on any node of the cluster, while the driver
(the machine that runs `colony-zero`) fits the network and writes the run directory, exactly as
without Ray. Joining uses `colony_training.cluster.join_cluster`: loopback, token and version
problems stop the run with one line before anything is written.

What survives what: a chunk's games are fixed by their seeds, so when a node dies mid-generation
Ray runs its chunk again on a node that is still alive (`MAX_RETRIES` system-failure retries)
and the generation's data are the same as if nothing had happened; the run prints how many
nodes it has lost. A lost driver or head node is continued with `colony-zero --resume RUN_DIR`.
"""

from __future__ import annotations

import concurrent.futures as cf
from collections.abc import Callable
from typing import Any


class DistributedError(RuntimeError):
    """Joining the cluster failed; the message is one line that says why and what to do."""


MAX_RETRIES = 3
"""Times Ray runs a self-play chunk again after its worker or node died (Ray's default for tasks)."""


def _play_on_node(fn: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    """Run one chunk; report the node it ran on with its result."""
    import ray

    return ray.get_runtime_context().get_node_id(), fn(*args)


class RayPool:
    """The two methods of `concurrent.futures.Executor` the trainer uses, over Ray tasks.

    `nodes_used` collects the node ids that returned chunks since the last `take_nodes()`.
    """

    def __init__(self, address: str) -> None:
        try:
            import ray
        except ImportError:
            raise DistributedError("config key 'address' needs Ray: pip install 'colony-rl[rllib]'") from None
        from ..cluster import ClusterError, join_cluster

        try:
            join_cluster(address)
        except ClusterError as e:
            raise DistributedError(str(e)) from None
        self._ray = ray
        self._task = ray.remote(num_cpus=1, max_retries=MAX_RETRIES)(_play_on_node)
        self._nodes_at_start = self.alive_nodes()
        self.nodes_used: set[str] = set()

    def alive_nodes(self) -> int:
        return sum(1 for n in self._ray.nodes() if n.get("Alive"))

    def lost_nodes(self) -> tuple[int, int]:
        """(nodes lost since the run joined, nodes it joined with)."""
        return max(0, self._nodes_at_start - self.alive_nodes()), self._nodes_at_start

    def take_nodes(self) -> int:
        """Distinct nodes that played chunks since the last call."""
        n, self.nodes_used = len(self.nodes_used), set()
        return n

    def submit(self, fn: Callable[..., Any], *args: Any) -> cf.Future:
        out: cf.Future = cf.Future()

        def done(f: cf.Future) -> None:
            try:
                node, result = f.result()
            except BaseException as e:  # noqa: BLE001 - handed to the caller's .result()
                out.set_exception(e)
                return
            self.nodes_used.add(node)
            out.set_result(result)

        self._task.remote(fn, *args).future().add_done_callback(done)
        return out

    def shutdown(self, cancel_futures: bool = False) -> None:
        self._ray.shutdown()
