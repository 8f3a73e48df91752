"""The Ray plumbing of every distributed path: a private Ray instance on loopback, or a Ray cluster it joins.

Used by `colony-train-rllib` (rllib/selfplay.py) and by `colony-zero --address` (zero/distributed.py);
nothing here is RLlib's.

Two things Ray does not do on its own, which this module adds:

- **The private instance listens on loopback only.** On Linux, Ray replaces `127.0.0.1` with
  the machine's network address (`ray._private.services.resolve_ip_for_localhost`), so its
  GCS, raylet and workers listen on every interface, unless `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`
  is `0`. Ray reads that variable once, when it is imported, so `start_local` sets both the
  variable (for the processes Ray starts) and Ray's constant (for this one), and then checks
  the node's address, refusing to run if it is not loopback (a future Ray that binds elsewhere
  fails loudly instead of exposing a port). `tests/integrations/test_integrations_rllib.py` checks the
  listening sockets of the started processes.
- **Joining a cluster fails with one line naming the cause.** Ray reports an unreachable
  head, a wrong or missing authentication token and a version mismatch as ~20 raw log lines
  and a bare `ConnectionError`. `join_cluster` probes the head's port first (seconds, not
  minutes), keeps Ray's connection log off the terminal while it connects, and turns each
  failure into a `ClusterError` whose message says what to do.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import socket
import sys
import tempfile
from collections.abc import Iterator

import ray

LOOPBACK = "127.0.0.1"
CLUSTER_ENV_VAR = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
PROBE_TIMEOUT_S = 5.0
"""Seconds to wait for the head's port to accept a TCP connection before calling it unreachable."""
AUTH_MARKERS = ("InvalidAuthToken", "Unauthenticated", "AuthenticationError")
_ADDRESS_RE = re.compile(r"^(?:ray://)?(?P<host>\[[^\]]+\]|[^:]+):(?P<port>[0-9]+)$")


class ClusterError(RuntimeError):
    """Ray could not be started or joined; the message is one line and says what to do."""


def is_loopback(host: str) -> bool:
    """Whether an IP address (v4, v6 or v4-mapped v6, as psutil reports them) is a loopback address."""
    try:
        addr = ipaddress.ip_address(host.strip("[]").split("%")[0])
    except ValueError:
        return False
    mapped = getattr(addr, "ipv4_mapped", None)
    return (mapped or addr).is_loopback


@contextlib.contextmanager
def loopback_only() -> Iterator[None]:
    """Within the block, Ray keeps `127.0.0.1` as the node address instead of the network address."""
    from ray._private import ray_constants  # the constant Ray's address resolution reads

    old_env, old_const = os.environ.get(CLUSTER_ENV_VAR), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[CLUSTER_ENV_VAR] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = old_const
        if old_env is None:
            os.environ.pop(CLUSTER_ENV_VAR, None)
        else:
            os.environ[CLUSTER_ENV_VAR] = old_env


def inet_sockets(root_pid: int | None = None, include_root: bool = True) -> tuple[list[str], list[str]]:
    """Listening and connected-to addresses ("name ip:port") of a process (default: this one) and its descendants.

    A private Ray instance's processes (GCS, raylet, agents, workers) are all descendants of
    the driver that started it, so this sees every port it opened.
    """
    import psutil  # ray depends on psutil (and ships a copy)

    root = psutil.Process(root_pid)
    listening: list[str] = []
    remote: list[str] = []
    for proc in [root] * include_root + root.children(recursive=True):
        try:
            name, conns = proc.name(), proc.net_connections(kind="inet")
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            continue  # ended meanwhile
        for c in conns:
            if c.status == psutil.CONN_LISTEN:
                listening.append(f"{name} {c.laddr.ip}:{c.laddr.port}")
            elif c.raddr:
                remote.append(f"{name} {c.raddr.ip}:{c.raddr.port}")
    return listening, remote


def beyond_loopback(addresses: list[str]) -> list[str]:
    """The entries of `inet_sockets` whose address is not loopback (the wildcard `::`/`0.0.0.0` included)."""
    return [a for a in addresses if not is_loopback(a.rsplit(" ", 1)[-1].rsplit(":", 1)[0])]


def start_local(num_cpus: int) -> None:
    """A private single-machine Ray instance, on loopback only, with no dashboard.

    Checked after the start: every node address and every port the instance listens on must
    be loopback, or the instance is shut down again and the run refused.
    """
    with loopback_only():
        # address="local": always a new instance. With no address Ray joins any Ray it finds on this
        # machine (RAY_ADDRESS, /tmp/ray/ray_current_cluster, or a running GCS process found by pgrep).
        ray.init(address="local", num_cpus=num_cpus or None, include_dashboard=False, _node_ip_address=LOOPBACK,
                 log_to_driver=False)
        exposed = [a for a in (n["NodeManagerAddress"] for n in ray.nodes()) if not is_loopback(a)]
        exposed += beyond_loopback(inet_sockets(include_root=False)[0])  # this process may be a notebook's
        if exposed:
            ray.shutdown()
            raise ClusterError(f"the private Ray instance listens on {exposed[0]}, not loopback only; refusing to run "
                               "with a Ray port reachable from the network (start a cluster with `ray start` instead)")


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[list[str]]:
    """Send this process's stderr (file descriptor 2, which Ray's C++ core logs to) to a file.

    Yields a list that receives the captured text when the block ends, failure or not.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    captured: list[str] = []
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield captured
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            captured.append(tmp.read().decode(errors="replace"))


def probe(address: str, timeout: float = PROBE_TIMEOUT_S) -> None:
    """Raise `ClusterError` unless something accepts TCP connections at HOST:PORT."""
    m = _ADDRESS_RE.match(address)
    if m is None:
        return  # 'auto': Ray finds the address itself and says so if it cannot
    host, port = m["host"].strip("[]"), int(m["port"])
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except OSError as e:
        reason = "timed out" if isinstance(e, socket.timeout) else (e.strerror or str(e)).lower()
        raise ClusterError(f"cannot reach the Ray cluster at {address}: {reason}; is `ray start --head --port={port}` "
                           "running there, and is the port open from this machine?") from None


def _chain_text(e: BaseException) -> str:
    parts = []
    while e is not None and len(parts) < 5:
        parts.append(f"{type(e).__name__}: {e}")
        e = e.__cause__ or e.__context__
    return "\n".join(parts)


def explain(address: str, error: BaseException, log: str) -> str:
    """One line for a failed `ray.init(address=...)`, from the exception and Ray's connection log."""
    text = _chain_text(error) + "\n" + log
    if any(m in text for m in AUTH_MARKERS):
        return (f"the Ray cluster at {address} rejected this process's authentication token: set RAY_AUTH_MODE=token and "
                "RAY_AUTH_TOKEN to the cluster's token (`ray get-auth-token` on the head node prints it)")
    if "Version mismatch" in text:
        # Ray's message lists the cluster's "Ray: X / Python: Y", then this process's.
        versions = re.findall(r"(Ray|Python): (\S+)", str(error))
        cluster = " / ".join(f"{k} {v}" for k, v in versions[:2]) or "another version"
        here = " / ".join(f"{k} {v}" for k, v in versions[2:4]) or "this version"
        return (f"Ray version mismatch: the cluster at {address} runs {cluster}, this process {here}; install the same "
                "Ray and Python versions on every node and on the driver")
    if "Could not find any running Ray instance" in text:
        return "no running Ray cluster found for --address auto: start one with `ray start --head`, or pass HOST:PORT"
    first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    return f"cannot join the Ray cluster at {address}: {first}"


def join_cluster(address: str) -> None:
    """`ray.init(address=...)`, with each failure turned into a one-line `ClusterError`."""
    probe(address)
    error: BaseException | None = None
    with _quiet_stderr() as log:
        try:
            ray.init(address=address, log_to_driver=False)
        except (ConnectionError, RuntimeError, ray.exceptions.RayError) as e:
            error = e
    if error is not None:
        raise ClusterError(explain(address, error, log[0])) from None
    sys.stderr.write(log[0])  # Ray's "Connected to Ray cluster" lines, now that they are good news


@contextlib.contextmanager
def ray_session(address: str, num_cpus: int = 0) -> Iterator[bool]:
    """Ray for one run: join `address`, or start a private loopback instance if it is ''.

    Yields whether this call started Ray (it then shuts it down at the end); a Ray instance
    that is already running (a notebook, a test) is used as it is and left running.
    """
    if ray.is_initialized():
        yield False
        return
    if address:
        join_cluster(address)
        try:
            yield True
        finally:
            ray.shutdown()
    else:
        with loopback_only():
            start_local(num_cpus)
            try:
                yield True
            finally:
                ray.shutdown()
