"""What change detection costs on a large dump: stat only, the head-and-tail fingerprint, and
full content hashes, read cold (the files' pages dropped from the cache first) and warm.

    python3 bench/fingerprint.py --out /tmp/fp --mb 2000
"""

from __future__ import annotations

import argparse
import hashlib
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipeline.jobs.dumps import _regular_files  # noqa: E402
from pipeline.readers.identity import hash_edges as _hash_edges  # noqa: E402

CHUNK = 1 << 20


def make(out: Path, mb: int, slice_mb: int = 2) -> None:
    data = out / "data"
    if (out / ".complete").exists():
        return
    data.mkdir(parents=True, exist_ok=True)
    for i in range(mb // slice_mb):
        (data / f"ts_track.data.0.slice_{i}").write_bytes(os.urandom(slice_mb << 20))
    (out / ".complete").write_text("")


def drop_cache(files) -> None:
    for p in files:
        fd = os.open(p, os.O_RDONLY)
        try:
            os.fsync(fd)
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def stat_only(files):
    h = hashlib.blake2b()
    for p in files:
        st = p.stat()
        h.update(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()


def edges(files):
    h = hashlib.sha256()
    for p in files:
        _hash_edges(h, p, p.stat().st_size)
    return h.hexdigest()


def full(name):
    def run(files):
        h = hashlib.new(name)
        buf = bytearray(CHUNK)
        view = memoryview(buf)
        for p in files:
            with open(p, "rb", buffering=0) as fh:
                while n := fh.readinto(buf):
                    h.update(view[:n])
        return h.hexdigest()

    return run


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--mb", type=int, default=2000)
    a = ap.parse_args()
    make(a.out, a.mb)
    files = _regular_files(a.out)
    size = sum(p.stat().st_size for p in files)
    print(f"{len(files)} files, {size / 1e6:.0f} MB")
    for name, fn in [
        ("stat (names, sizes, mtimes)", stat_only),
        ("edges (first/last 64 KiB)", edges),
        ("blake2b full", full("blake2b")),
        ("sha256 full", full("sha256")),
        ("sha1 full", full("sha1")),
        ("md5 full", full("md5")),
    ]:
        for state in ("cold", "warm"):
            if state == "cold":
                drop_cache(files)
            t0 = time.perf_counter()
            fn(files)
            dt = time.perf_counter() - t0
            print(f"{name:<30} {state}: {dt:7.2f} s  ({size / 1e6 / dt:8.0f} MB/s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
