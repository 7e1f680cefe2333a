"""Which file is what in a generation-1 ``result_dir`` (docs/formats.md#dir-result-dir, #file-names).

Data files carry their device id and slice number in the name, under three naming
schemes: ``.slice_N`` ("modern"), ``.<dev>.<n>`` ("legacy infer") and
``.dev.profiler_default_tag.<dev>.slice_N`` ("legacy training"). Files of one kind
and device form a stream, ordered by slice number.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.paths import TAGS_FILE, relative
from pipeline.readers.slices import SliceFile, gone_slices

# kind -> patterns; the named groups dev (device id) and n (slice number) are required,
# other named groups (cat, a, b) become part of the stream key.
_P = {
    "acl": [
        r"AclModule\.(?P<cat>acl_model|acl_op|acl_rts|acl_others)\.(?P<dev>\d+)\.slice_(?P<n>\d+)",
        r"AclModule\.(?P<cat>acl_model|acl_op|acl_rts|acl_others)\.(?P<dev>\d+)\.(?P<n>\d+)",
    ],
    "acl_hash": [r"AclModule\.hash_dic\.(?P<dev>\d+)\.slice_(?P<n>\d+)"],
    "runtime_api": [
        r"[rR]untime\.api\.(?P<dev>\d+)\.slice_(?P<n>\d+)",
        r"[rR]untime\.runtime\.data\.(?P<dev>\d+)\.(?P<n>\d+)",
    ],
    "runtime_track": [
        r"[rR]untime\.task_track\.(?P<dev>\d+)\.slice_(?P<n>\d+)",
        r"[rR]untime\.runtime\.(?P<dev>\d+)\.(?P<n>\d+)",
        r"[rR]untime\.host\.runtime\.(?P<dev>\d+)\.slice_(?P<n>\d+)",
    ],
    "ge_task_desc": [
        r"Framework\.task_desc_info\.(?P<dev>\d+)\.slice_(?P<n>\d+)",
        r"Framework\.task_desc_info\.(?P<dev>\d+)\.(?P<n>\d+)",
        r"Framework\.host\.task_desc_info\.(?P<dev>\d+)\.slice_(?P<n>\d+)",
    ],
    "ge_model_time": [
        r"Framework\.model_time_info_(?P<a>\d+)_(?P<b>\d+)\.(?P<dev>\d+)\.slice_(?P<n>\d+)",
        r"Framework\.model_time_info_(?P<a>\d+)_(?P<b>\d+)\.(?P<dev>\d+)\.(?P<n>\d+)",
        r"Framework\.host\.model_time_info_(?P<a>\d+)_(?P<b>\d+)\.(?P<dev>\d+)\.slice_(?P<n>\d+)",
    ],
    "ge_model_load": [
        r"Framework\.model_load_info_(?P<a>\d+)\.(?P<dev>\d+)\.slice_(?P<n>\d+)",
        r"Framework\.model_load_info_(?P<a>\d+)\.(?P<dev>\d+)\.(?P<n>\d+)",
        r"Framework\.host\.model_load_info_(?P<a>\d+)\.(?P<dev>\d+)\.slice_(?P<n>\d+)",
    ],
    "ge_hash": [r"Framework\.hash_dic\.(?P<dev>\d+)\.slice_(?P<n>\d+)"],
    "ts_track": [
        r"ts_track\.data\.(?P<dev>\d+)\.slice_(?P<n>\d+)",
        r"ts_track\.data\.\d+\.(?P<dev>\d+)\.(?P<n>\d+)",
        r"ts_track\.data\.\d+\.dev\.profiler_default_tag\.(?P<dev>\d+)\.slice_(?P<n>\d+)",
    ],
    "aicore": [
        r"aicore\.data\.(?P<dev>\d+)\.slice_(?P<n>\d+)",
        r"aicore\.data\.\d+\.(?P<dev>\d+)\.(?P<n>\d+)",
        r"aicore\.data\.\d+\.dev\.profiler_default_tag\.(?P<dev>\d+)\.slice_(?P<n>\d+)",
    ],
}
PATTERNS = [(kind, re.compile(p + r"$")) for kind, ps in _P.items() for p in ps]

# Every table holds a device id as an int32: a file or folder whose name's id does not fit is
# not read, and named in ingest_issues (BAD_DEVICE).
MAX_DEVICE_ID = 2**31 - 1
BAD_DEVICE = "the device id in its name does not fit 32 bits; not read"


def fits_device(text: str | None) -> bool:
    """A device id of a name (digits, or None for a name without one) that a table can hold."""
    return text is None or int(text) <= MAX_DEVICE_ID


# Names that are never data: producer and msprof markers, archives.
_IGNORED = re.compile(r".*\.(done|complete|zip)$|^all_file\.complete$")

CONTROL = {
    "info": re.compile(r"^info\.json(?:\.(?P<dev>\d+))?$"),
    "sample": re.compile(r"^sample\.json(?:\.(?P<dev>\d+))?$"),
    "start_info": re.compile(r"^start_info(?:\.(?P<dev>\d+))?$"),
    "end_info": re.compile(r"^end_info(?:\.(?P<dev>\d+))?$"),
    "host_start": re.compile(r"^host_start\.log(?:\.(?P<dev>\d+))?$"),
    "dev_start": re.compile(r"^dev_start\.log(?:\.(?P<dev>\d+))?$"),
}


@dataclass
class Stream:
    kind: str
    device_id: int
    key: tuple  # extra name parts (ACL category, model_time a/b)
    files: list[SliceFile] = field(default_factory=list)
    slice_numbers: list[int] = field(default_factory=list)


@dataclass
class Layout1Files:
    root: Path
    control: dict[str, dict[int | None, Path]]  # kind -> device id (None: no suffix) -> path
    streams: list[Stream]
    unknown: list[str]  # relative paths of files in data/ that are not generation-1 data
    not_files: list[str]  # names that match a pattern but are not regular files
    bad_device: list[str] = field(default_factory=list)  # names whose device id does not fit (BAD_DEVICE)
    # slices whose .done marker is there and the slice is not: (relative path, bytes declared, device)
    gone: list[tuple[str, int | None, int | None]] = field(default_factory=list)


_rel = relative  # a data file's name as stored in source_file


def match_data_name(name: str) -> tuple[str, dict] | None:
    for kind, rx in PATTERNS:
        m = rx.match(name)
        if m:
            return kind, m.groupdict()
    return None


def _entries(d: Path) -> list[Path]:
    try:
        return sorted(d.iterdir())
    except OSError:
        return []


def inside(root: Path, p: Path) -> bool:
    """True when p is a regular file whose real path stays inside the dump."""
    try:
        real = p.resolve(strict=True)
        return real.is_file() and real.is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # RuntimeError: a symlink loop (Python < 3.13)
        return False


def is_result_dir(path: Path) -> bool:
    """A directory holding a ``data/`` folder with at least one generation-1 data file."""
    data = path / "data"
    if not data.is_dir() or data.is_symlink():
        return False
    return any(match_data_name(p.name) for p in _entries(data))


# Top-level names a result_dir may hold besides control files: markers, and what msprof
# writes into a directory it parsed (docs/formats.md#markers, #dir-prof).
_KNOWN_TOP = re.compile(
    r"^(data|sqlite|log|summary|timeline|mindstudio_profiler_output)$|.*\.(done|complete|zip)$"
)


def scan(root: Path) -> Layout1Files:
    control: dict[str, dict[int | None, Path]] = {k: {} for k in CONTROL}
    streams: dict[tuple, Stream] = {}
    unknown, not_files, bad_device = [], [], []
    for p in _entries(root):
        kind = next((k for k, rx in CONTROL.items() if rx.match(p.name)), None)
        if kind is None:
            if not _KNOWN_TOP.match(p.name) and p.name != TAGS_FILE:  # (the tags: read by the jobs)
                unknown.append(_rel(root, p))
            continue
        if not inside(root, p):
            not_files.append(_rel(root, p))
            continue
        dev = CONTROL[kind].match(p.name).group("dev")
        if not fits_device(dev):
            bad_device.append(_rel(root, p))
            continue
        control[kind][int(dev) if dev is not None else None] = p
    data = root / "data"
    entries = _entries(data)
    for p in entries:
        if _IGNORED.match(p.name):
            continue
        hit = match_data_name(p.name)
        if hit is None:
            unknown.append(_rel(root, p))
            continue
        if not inside(root, p):
            not_files.append(_rel(root, p))
            continue
        kind, g = hit
        if not fits_device(g["dev"]):
            bad_device.append(_rel(root, p))
            continue
        dev, n = int(g.pop("dev")), int(g.pop("n"))
        key = tuple(sorted(g.items()))
        s = streams.setdefault((kind, dev, key), Stream(kind, dev, key))
        s.files.append(SliceFile(p, _rel(root, p), p.stat().st_size))
        s.slice_numbers.append(n)
    for s in streams.values():
        order = sorted(range(len(s.files)), key=lambda i: s.slice_numbers[i])
        s.files = [s.files[i] for i in order]
        s.slice_numbers = [s.slice_numbers[i] for i in order]
    ordered = sorted(streams.values(), key=lambda s: (s.kind, s.device_id, s.key))
    # (Ascend310 never ages a stream: every slice its marker names should be there)
    gone = [
        (_rel(root, data / name), size, int(g["dev"]) if fits_device(g["dev"]) else None)
        for name, size, (_, g) in gone_slices(data, [p.name for p in entries], match_data_name)
    ]
    return Layout1Files(root, control, ordered, unknown, not_files, bad_device, gone)
