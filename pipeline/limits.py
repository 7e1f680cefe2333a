"""The build's resource defaults, in a module of their own: the commands' option defaults and
`pipeline.jobs.runner` read them without loading DuckDB."""

from __future__ import annotations

import os

# DuckDB's memory limit for a build, when --memory-limit does not set it: a share of the memory
# this process may use (the machine's, or its container's when that is lower), between a floor
# and a cap. DuckDB spills to the build's temporary folder beyond it, so every transform works
# within any limit from the floor up; a larger limit spills less. The rest of a build's peak
# (Python, Arrow, DuckDB's memory outside its pool) is about the same for every limit, so the
# share is small: the build shares the machine with whatever else runs at night. The
# measurements behind the values are in bench/HISTORY.md.
MEMORY_LIMIT_SHARE = 32  # the limit is 1/32 of the memory
MEMORY_LIMIT_FLOOR_MB = 320
MEMORY_LIMIT_CAP_MB = 2000

# the memory a container may use: cgroup v2's memory.max, or v1's memory.limit_in_bytes, of the
# process's own group (/proc/self/cgroup), else of the root ("max", or a huge number, when
# unlimited)
_CGROUP_FILES = {
    "": "/sys/fs/cgroup{group}/memory.max",
    "memory": "/sys/fs/cgroup/memory{group}/memory.limit_in_bytes",
}


def _cgroup_limit_files() -> list[str]:
    files = []
    try:
        with open("/proc/self/cgroup") as fh:
            for line in fh:
                _, controllers, group = line.rstrip("\n").split(":", 2)
                for controller in controllers.split(",") if controllers else [""]:
                    if controller in _CGROUP_FILES and group.strip("/"):
                        files.append(_CGROUP_FILES[controller].format(group=group.rstrip("/")))
    except (OSError, ValueError):
        pass
    return files + [f.format(group="") for f in _CGROUP_FILES.values()]


def machine_memory() -> int | None:
    """Bytes of memory this process may use: the machine's physical memory, or its control
    group's limit when that is lower; None where neither is known."""
    sizes = []
    try:
        sizes.append(os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):  # not on this system
        pass
    for path in _cgroup_limit_files():
        try:
            with open(path) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit():
            sizes.append(int(text))
    sizes = [s for s in sizes if s > 0]
    return min(sizes) if sizes else None


def default_memory_limit(memory: int | None = None) -> str:
    """The memory limit a build takes by default on a machine of ``memory`` bytes (this one's,
    machine_memory(), when not given), as DuckDB reads it: ``"<N>MB"``, 1/MEMORY_LIMIT_SHARE
    of the memory between MEMORY_LIMIT_FLOOR_MB and MEMORY_LIMIT_CAP_MB (the floor when the
    memory is unknown)."""
    if memory is None:
        memory = machine_memory()
    mb = MEMORY_LIMIT_FLOOR_MB if memory is None else memory // MEMORY_LIMIT_SHARE // 10**6
    return f"{min(max(mb, MEMORY_LIMIT_FLOOR_MB), MEMORY_LIMIT_CAP_MB)}MB"


def memory_limit(given: str | None) -> str:
    """The memory limit a build uses: ``given`` (--memory-limit), else the machine's default.
    A negative size is refused (DuckDB would read it as its own default, not what was asked)."""
    if given and given.strip().startswith("-"):
        from pipeline.errors import UsageError

        raise UsageError(f"memory limit {given!r}: give a positive size (e.g. 2GB, 500MiB, 50%)")
    return given if given else default_memory_limit()


def describe_memory_limit(given: str | None) -> str:
    """The limit a build uses and where it comes from, as the commands print it."""
    if given:
        return f"{given} (--memory-limit)"
    memory = machine_memory()
    if memory is None:
        return f"{default_memory_limit(memory)} (the default; this machine's memory is unknown)"
    return (
        f"{default_memory_limit(memory)} (1/{MEMORY_LIMIT_SHARE} of this machine's {memory / 2**30:.1f} GiB)"
    )


# A night on a Dask cluster (pipeline.jobs.runner.night) starts a dump only while the data bytes
# of the dumps in flight stay within a budget: the workers' total memory limit, or, for workers
# without one, NIGHT_LIMITS_PER_THREAD build memory limits per worker thread.
NIGHT_LIMITS_PER_THREAD = 4

_SIZE_UNITS = {
    "": 1,
    "b": 1,
    "bytes": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "pb": 10**15,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
    "pib": 2**50,
}


def size_bytes(text: str) -> int:
    """A size as DuckDB's memory limit and the commands take it (``8GB``, ``500MiB``, ``1.5 GB``,
    ``1024``: bytes), or as DuckDB renders the setting (``305.1 MiB``, ``512 bytes``), in bytes;
    ValueError for one that is not."""
    import re

    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", text)
    if not m or m.group(2).lower() not in _SIZE_UNITS:
        raise ValueError(f"{text!r} is not a size (e.g. 8GB, 500MiB)")
    return int(float(m.group(1)) * _SIZE_UNITS[m.group(2).lower()])
