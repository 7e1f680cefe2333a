"""Finding dumps under a root, and what identifies one: its run id and content fingerprint."""

from __future__ import annotations

import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path

from pipeline.errors import InputError, MissingInput
from pipeline.paths import display
from pipeline.readers import exported, hiprof, prof

EDGE_BYTES = 64 * 1024


def detect(path: Path) -> str | None:
    """The layout of a dump directory, or None when it is not one profetl reads."""
    raw = prof.detect(path) or (
        "hiprof_result_dir" if hiprof.is_result_dir(path) else None
    )  # generations 1-3
    export_layout = exported.detect(path)  # generation 4; None where raw data of any generation is present
    if export_layout is not None and raw in (None, "msprof_prof", "msprof_job"):
        return export_layout  # a PROF_* tree or job whose data/ is gone, or a torch_npu rank folder
    return raw  # raw data, where present, is read rather than its exports


def discover(root: Path, max_depth: int = 6, unreadable: list | None = None) -> list[Path]:
    """Every dump at or under ``root``; links are not followed, dumps are not searched inside but
    for a torch_npu rank folder, whose PROF_* folders that still hold raw data are dumps of their own.

    A folder that cannot be read (permission denied, gone meanwhile) is skipped, the others
    still searched; with ``unreadable``, each is appended to it as (path, reason)."""
    root = Path(root)
    if not root.exists():
        raise MissingInput(display(root))
    if not root.is_dir():
        raise InputError("is not a directory", path=display(root))
    found: list[Path] = []

    def walk(d: Path, depth: int) -> None:
        try:
            layout = detect(d)
        except OSError as e:
            if unreadable is not None:
                unreadable.append((_unsearchable(d, e), e.strerror or str(e)))
            return
        if layout:
            found.append(d)
            if layout == "torch_npu_export":  # and the PROF_* folders in it that keep raw data
                found.extend(exported.nested_runs(exported.scan(d, layout)))
            return
        if depth >= max_depth:
            return
        try:
            children = sorted(p for p in d.iterdir() if p.is_dir() and not p.is_symlink())
        except OSError as e:
            if unreadable is not None:
                unreadable.append((_unsearchable(d, e), e.strerror or str(e)))
            return
        for c in children:
            if not exported.exports_of_raw(c):  # exports of the raw data found beside them: not a run
                walk(c, depth + 1)

    walk(root, 0)
    return found


def _unsearchable(d: Path, e: OSError) -> Path:
    """The folder that ``e``, met while looking into ``d``, says cannot be searched: the path it
    names when that is a folder whose listing failed, else that path's folder (looking at a
    name inside a folder that cannot be searched fails, and names the name)."""
    if not e.filename:
        return d
    p = Path(os.fsdecode(e.filename))
    try:
        os.stat(p)
        return p
    except OSError:
        return p.parent


def _regular_files(root: Path) -> list[Path]:
    out = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            p = Path(dirpath) / name
            if p.is_file() and not p.is_symlink():
                out.append(p)
    return out


def _hash_edges(h, p: Path, size: int) -> None:
    """Feed ``h`` a file's first and last 64 KiB (the whole file when it is smaller)."""
    with open(p, "rb") as fh:
        h.update(fh.read(EDGE_BYTES))
        if size > 2 * EDGE_BYTES:
            fh.seek(size - EDGE_BYTES)
            h.update(fh.read(EDGE_BYTES))
        elif size > EDGE_BYTES:
            h.update(fh.read())


def fingerprint_file(p: Path) -> str:
    """Hash of one file's size and edges: what ``fingerprint`` takes of each file."""
    h = hashlib.sha256()
    size = p.stat().st_size
    h.update(f"{size}\0".encode())
    _hash_edges(h, p, size)
    return h.hexdigest()[:16]


def content_key(root: Path) -> str:
    """Names and sizes of every file, and its first and last 64 KiB: what tells one dump from
    another wherever it lies (a copy, a new mount, mtimes not kept). Cheap on large dumps;
    it changes when a slice is added, removed, truncated, or rewritten at either end."""
    h = hashlib.sha256()
    for p in _regular_files(root):
        rel = p.relative_to(root).as_posix()
        size = p.stat().st_size
        h.update(os.fsencode(rel) + f"\0{size}\0".encode())
        _hash_edges(h, p, size)
    return h.hexdigest()


def _stamp_key(root: Path) -> str:
    """Names, sizes and modification times (ns) of every file."""
    h = hashlib.sha256()
    for p in _regular_files(root):
        st = p.stat()
        h.update(os.fsencode(p.relative_to(root).as_posix()) + f"\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()[:32]


def fingerprint(root: Path) -> str:
    """``<content_key>:<stamp>``: the dump's content key, then a hash of every file's name,
    size and modification time. The dump is unchanged when both are (docs/architecture.md#change-detection):
    a write anywhere in a file moves its mtime, which costs a ``stat`` per file where hashing
    every byte would read the whole dump every night (bench/HISTORY.md)."""
    return f"{content_key(root)}:{_stamp_key(root)}"


def unchanged(recorded: str | None, now: str) -> bool:
    """Whether a dump whose fingerprint is ``now`` is the one recorded. A record written before
    fingerprints had a stamp holds the content key alone: it is compared with that."""
    if not recorded:
        return False
    if ":" not in recorded:
        return recorded == now.split(":", 1)[0]
    return recorded == now


def same_content(recorded: str | None, now: str) -> bool:
    """Whether two fingerprints are of the same dump's content (names, sizes, edges), whatever
    the files' modification times."""
    return bool(recorded) and recorded.split(":", 1)[0] == now.split(":", 1)[0]


def run_id(collection_start_us: int | None, metadata: dict[str, str]) -> str:
    """Collection start (UTC) plus a hash of the control files: the same dump gets the
    same id wherever it is mounted, and two dumps started the same second differ."""
    h = hashlib.sha256()
    for name in sorted(metadata):
        h.update(name.encode() + b"\0" + metadata[name].encode() + b"\0")
    if collection_start_us is not None:
        stamp = datetime.fromtimestamp(collection_start_us / 1e6, UTC).strftime("%Y%m%dT%H%M%S")
    else:
        stamp = "nostart"
    return f"{stamp}-{h.hexdigest()[:8]}"
