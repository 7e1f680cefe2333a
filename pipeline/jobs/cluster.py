"""Runs and builds on a Dask cluster (docs/architecture.md#cluster): the optional ``dask`` extra.

A ``Cluster`` runs a job's units of work (pipeline.jobs.units: a device of a dump, read or
built) as Dask tasks, on a local cluster of worker processes or on a running scheduler. The
process that started the job keeps what commits: it puts the units' files together and
commits each run once, as without a cluster. Workers write into the warehouse's temporary
folder, so the warehouse must be on a filesystem every worker sees at the same path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from pipeline.errors import ClusterUnavailable, PipelineError, UnitFailed, UsageError
from pipeline.paths import display
from pipeline.progress import UNITS, report

CONNECT_SECONDS = 10  # how long to wait for a scheduler before saying it cannot be reached
POLL_SECONDS = 1.0  # how often a job waiting for its tasks asks whether the pool can still run them


def _call(fn: Callable, args: tuple):
    """Run one unit on a worker: its result, or the one-line reason it failed (a library
    error's message; an exception's class may not rebuild from its pickle on this side)."""
    try:
        return True, fn(*args)
    except PipelineError as e:
        return False, str(e)
    except OSError as e:
        return False, f"{display(e.filename) if e.filename else ''}: {e.strerror or e}".lstrip(": ")
    except Exception as e:  # noqa: BLE001 - one unit's bug fails its run, with what it was
        return False, f"internal error: {type(e).__name__}: {e}"


class Units:
    """Runs a job's units (function, arguments) on a ``concurrent.futures`` executor: threads
    of this process (``Threads``) or a Dask cluster's (``Cluster``, through Dask's executor).
    One ``run`` for both; a kind of pool says only where its executor comes from, how it tells
    a failure of its own, and what it cancels."""

    where = "units"

    def _executor(self):
        raise NotImplementedError

    def _reason(self, e: BaseException) -> str:
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"

    def _cancel(self, executor, futures) -> None:
        for f in futures:
            f.cancel()

    def run(
        self, calls: Sequence[tuple[Callable, tuple]], labels: Sequence[str], phase: str = "units"
    ) -> list:
        """Run ``calls`` (function, arguments) as tasks; their results in order. The first
        unit that fails (or, on a cluster, whose worker died as often as the scheduler
        retries) stops the rest and raises UnitFailed naming it (``labels``) with its reason."""
        from concurrent.futures import FIRST_COMPLETED, wait

        executor = self._executor()
        try:
            futures = [executor.submit(_call, fn, args) for fn, args in calls]
        except Exception as e:  # noqa: BLE001 - a client closed after its scheduler went away
            raise UnitFailed(f"{labels[0]}: not started: {self._reason(e)}") from None
        index = {f: i for i, f in enumerate(futures)}
        report(phase=f"{phase} {self.where}", total=len(futures), unit=UNITS)
        results: list = [None] * len(futures)
        pending = set(futures)
        try:
            while pending:
                done, pending = wait(pending, timeout=POLL_SECONDS, return_when=FIRST_COMPLETED)
                if not done and (lost := self._lost()) is not None:
                    # a client that gave up on its scheduler may never settle its futures
                    raise UnitFailed(f"{labels[min(index[f] for f in pending)]}: {lost}")
                for fut in sorted(done, key=index.__getitem__):
                    i = index[fut]
                    try:
                        ok, value = fut.result()
                    except Exception as e:  # noqa: BLE001 - KilledWorker, a lost scheduler, ...
                        raise UnitFailed(f"{labels[i]}: {self._reason(e)}") from None
                    if not ok:
                        raise UnitFailed(f"{labels[i]}: {value}")
                    results[i] = value
                    report(advance=1)
        except BaseException:
            self._cancel(executor, futures)
            raise
        return results

    def _lost(self) -> str | None:
        """Why the pool can no longer finish its tasks, or None while it can."""
        return None

    def capacity(self) -> tuple[int, int | None] | None:
        """How a night shares this pool (``pipeline.jobs.runner.run_roots``): the most dumps
        whose units it takes at once, and the data bytes those dumps may hold together (None:
        no limit known here); None: one dump after another."""
        return None

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class Cluster(Units):
    """A Dask client: ``workers`` worker processes on this machine (a LocalCluster, one thread
    each) or the running scheduler at ``scheduler`` (``tcp://HOST:8786``)."""

    def __init__(self, workers: int | None = None, scheduler: str | None = None):
        if (workers is None) == (scheduler is None):
            raise UsageError("a cluster needs either a number of workers or a scheduler address, not both")
        if workers is not None and workers < 1:
            raise UsageError(f"--workers {workers}: must be 1 or more")
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise UsageError("--workers and --scheduler need Dask: pip install 'profetl[dask]'") from None
        self._local = None
        self.address = scheduler
        if scheduler is not None:
            try:
                self.client = Client(scheduler, timeout=CONNECT_SECONDS)
            except (OSError, TimeoutError, ValueError) as e:
                raise ClusterUnavailable(
                    f"cannot reach the Dask scheduler at {scheduler} "
                    f"(waited {CONNECT_SECONDS} s): {str(e).splitlines()[0]}"
                ) from None
        else:
            self._local = LocalCluster(
                n_workers=workers,
                threads_per_worker=1,
                processes=True,
                dashboard_address=":0",
                silence_logs=logging.ERROR,
            )
            self.client = Client(self._local)
            self.address = self._local.scheduler_address

    where = "on the cluster"

    def _executor(self):
        # a Dask executor per run: cancelling one job's tasks leaves the client for the next
        return self.client.get_executor(pure=False)

    def _reason(self, e: BaseException) -> str:
        return _cluster_reason(e, self.address)

    def _lost(self) -> str | None:
        if self.client.status in ("closing", "closed"):
            return f"the connection to the Dask scheduler at {self.address} was lost (was it stopped?)"
        return None

    def capacity(self) -> tuple[int, int | None]:
        """One dump more than the workers have threads (while a dump's files are put together
        and committed here, the workers have another's units), holding together at most the
        workers' total memory limit (None when a worker has none: ``dask worker
        --memory-limit 0``)."""
        try:
            info = self.client.scheduler_info(n_workers=-1)  # every worker, not the first few
        except TypeError:  # a Dask that lists them all anyway
            info = self.client.scheduler_info()
        workers = list(info.get("workers", {}).values())
        threads = sum(w.get("nthreads") or 1 for w in workers) or 1
        memory = [w.get("memory_limit") or 0 for w in workers]
        return threads + 1, (sum(memory) if memory and all(memory) else None)

    def _cancel(self, executor, futures) -> None:
        try:
            executor.shutdown(wait=False)  # cancels what it has not finished
        except Exception:  # noqa: BLE001 - a client that lost its scheduler: the reason is raised
            pass

    def close(self) -> None:
        self.client.close()
        if self._local is not None:
            self._local.close()


def _cluster_reason(e: BaseException, address: str | None) -> str:
    """Why a task failed on the cluster's side, in words."""
    name = type(e).__name__
    if name == "KilledWorker":
        return "the worker running it died, as often as the scheduler retries a task (distributed.scheduler.allowed-failures)"
    if name in (
        "CancelledError",
        "FutureCancelledError",
        "ClosedClientError",
        "CommClosedError",
        "StreamClosedError",
    ):
        return f"the connection to the Dask scheduler at {address} was lost (was it stopped?)"
    return f"{name}: {str(e).splitlines()[0] if str(e) else ''}"


class Threads(Units):
    """The units of a job run by a pool of ``n`` threads of this process: ``Cluster`` without
    Dask, to measure what decoding devices side by side in one process buys (bench/cluster.py)."""

    where = "in threads"

    def __init__(self, n: int):
        from concurrent.futures import ThreadPoolExecutor

        self._pool = ThreadPoolExecutor(n, thread_name_prefix="profetl-unit")

    def _executor(self):
        return self._pool

    def close(self) -> None:
        self._pool.shutdown(cancel_futures=True)
