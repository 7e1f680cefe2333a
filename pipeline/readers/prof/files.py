"""Which directory is a generation-2/3 dump, and which file in it is what.

Three shapes are recognised (docs/formats.md#dir-prof, #dir-job, #file-names):

* ``msprof_prof``: one ``PROF_*`` directory holding ``host/`` and one ``device_N/`` per
  NPU, each a *collection directory* with its control files and a ``data/`` folder.
* ``msprof_job``: a parent directory whose ``PROF_*`` children are one job: with several
  processes msprof writes one ``PROF_*`` per process, each holding a subset of the
  devices. Children form one job when their device sets are disjoint and their name
  timestamps lie within ``JOB_WINDOW_S`` of each other; otherwise each is its own dump.
* ``profiler_default_tag``: the older training naming (MindSpore 0.5 era,
  ``hwts.log.data.45.dev.profiler_default_tag.1.slice_0``), files in the directory itself
  or in its ``data/``, usually without ``info.json``.

A single directory with ``data/`` holding HWTS or STARS device files (msprof's pre-2023
one-directory layout, docs/formats.md#dir-result-dir, for a chip other than Ascend310) is read as one collection
directory (``msprof_result_dir``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pipeline.paths import TAGS_FILE, relative
from pipeline.readers.hiprof.files import CONTROL, fits_device, inside
from pipeline.readers.hiprof.files import PATTERNS as LEGACY_PATTERNS
from pipeline.readers.slices import NEVER_AGED, SliceFile, gone_slices

PROF_NAME = re.compile(r"^PROF_(?P<n>\d{1,10})_(?P<ts>\d{1,20})_(?P<rand>[A-Za-z0-9]{1,20})$")
DEVICE_DIR = re.compile(r"^device_(?P<dev>\d+)$")
HOST_ID = 64
JOB_WINDOW_S = 600

_DEV = r"(?P<dev>\d+)"
_N = r"(?P<n>\d+)"
_FAM = r"(?P<family>aging|unaging)"
_TRAIN = r"\d+\.(?:dev|host)\.profiler_default_tag\." + _DEV + r"\.slice_" + _N

# kind -> patterns (anchored at both ends). Groups: dev (device id), n (slice number),
# family (aging / unaging: separate streams, docs/formats.md#slices).
_P = {
    # device
    "ts_track": [r"ts_track\.data\." + _DEV + r"\.slice_" + _N, r"ts_track\.data\." + _TRAIN],
    "hwts": [
        r"hwts\.data\." + _DEV + r"\.slice_" + _N,
        r"hwts\.log\.data\." + _TRAIN,
        r"hwts\.log\.data\.\d+\." + _DEV + r"\." + _N,
    ],
    "aicore": [r"aicore\.data\." + _DEV + r"\.slice_" + _N, r"aicore\.data\." + _TRAIN],
    "stars_soc": [r"stars_soc\.data\." + _DEV + r"\.slice_" + _N],
    "ffts_profile": [r"ffts_profile\.data\." + _DEV + r"\.slice_" + _N],
    "lpm_freq": [r"lpmFreqConv\.data\." + _DEV + r"\.slice_" + _N],
    "training_trace": [r"training_trace\." + _TRAIN],
    # AI CPU task records, text or binary (docs/formats.md#aicpu-text, #aicpu-binary); not the
    # AICPUMI / AICPU_MODEL / TDT streams of the same family, which stay not read
    "aicpu": [r"DATA_PREPROCESS\.(?:dev\.)?AICPU\." + _DEV + r"\.slice_" + _N],
    # host, CANN 7+
    "api_event": [_FAM + r"\.api_event\.data\.slice_" + _N],
    "task_track": [_FAM + r"\.compact\.task_track\.slice_" + _N],
    "node_basic_info": [_FAM + r"\.compact\.node_basic_info\.slice_" + _N],
    "hash_dic": [_FAM + r"\.additional\.hash_dic\.slice_" + _N],
    "type_info_dic": [_FAM + r"\.additional\.type_info_dic\.slice_" + _N],
    "graph_id_map": [_FAM + r"\.additional\.graph_id_map\.slice_" + _N],
    # MindSpore 0.5 host text files (mindinsight framework_parser)
    "ms_task_desc": [r"Framework\.host\.vm\.task_desc_info\." + _DEV + r"\.slice_" + _N],
    "ms_graph_desc": [r"Framework\.host\.vm\.graph_desc_info\." + _DEV + r"\.slice_" + _N],
}
PATTERNS = [(kind, re.compile(p + r"$")) for kind, ps in _P.items() for p in ps]

# Producer files that are known but carry nothing the canonical tables hold: named in
# ingest_issues as "not read" rather than "unknown".
KNOWN_UNREAD = re.compile(
    r"^(DATA_PREPROCESS\..*|Framework\.host\.vm\.point\..*|(aging|unaging)\.(compact|additional)\..*"
    r"|aiVectorCore\.data\..*|ts_track\.aiv_data\..*)$"
)
_IGNORED = re.compile(r".*\.(done|complete|zip)$|^all_file\.complete$")
DEVICE_KINDS = {
    "ts_track",
    "hwts",
    "aicore",
    "stars_soc",
    "ffts_profile",
    "lpm_freq",
    "training_trace",
    "aicpu",
}
HOST_KINDS = {"api_event", "task_track", "node_basic_info", "hash_dic", "type_info_dic", "graph_id_map"}
STARS_KINDS = {"stars_soc", "ffts_profile", "lpm_freq"}


@dataclass
class Stream:
    kind: str
    device_id: int
    family: str  # aging / unaging / "" (device data)
    files: list[SliceFile] = field(default_factory=list)
    slice_numbers: list[int] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.files[0].rel if self.files else self.kind


@dataclass
class CollectionDir:
    """``host/``, ``device_N/`` or a one-directory dump: control files plus data streams."""

    path: Path
    rel: str  # relative to the dump root ("" for the root itself)
    device_id: int  # 64 for host; the name's id for device_N; -1 when only file names tell
    control: dict[str, dict[int | None, Path]]
    streams: list[Stream] = field(default_factory=list)
    legacy: list[tuple[str, dict, Path]] = field(default_factory=list)  # gen-1 host structs (hiprof patterns)
    unknown: list[str] = field(default_factory=list)
    unread: list[str] = field(default_factory=list)
    not_files: list[str] = field(default_factory=list)
    bad_device: list[str] = field(default_factory=list)  # names whose device id does not fit (BAD_DEVICE)
    # slices whose .done marker is there and the slice is not, and no aging explains it:
    # (relative path, bytes declared, device)
    gone: list[tuple[str, int | None, int]] = field(default_factory=list)
    has_data: bool = False

    @property
    def is_host(self) -> bool:
        return self.device_id == HOST_ID


@dataclass
class ProfDump:
    root: Path
    layout: str
    collections: list[CollectionDir]
    prof_dirs: list[str]  # PROF_* directories, relative to root ("" when root is one)


def _entries(d: Path) -> list[Path]:
    try:
        return sorted(d.iterdir())
    except OSError:
        return []


def _subdirs(d: Path) -> list[Path]:
    return [p for p in _entries(d) if p.is_dir() and not p.is_symlink()]


def match(name: str) -> tuple[str, dict] | None:
    for kind, rx in PATTERNS:
        m = rx.match(name)
        if m:
            return kind, m.groupdict()
    return None


def _legacy_match(name: str) -> tuple[str, dict] | None:
    for kind, rx in LEGACY_PATTERNS:
        if kind in ("ts_track", "aicore"):
            continue  # device streams of generation 1 are read through this module's kinds
        m = rx.match(name)
        if m:
            return kind, m.groupdict()
    return None


# --- detection -------------------------------------------------------------------------


def is_prof_dir(p: Path) -> bool:
    """A ``PROF_*`` directory with a ``host`` or ``device_N`` subdirectory."""
    if not p.name.startswith("PROF_") or not p.is_dir():
        return False
    return any(c.name == "host" or DEVICE_DIR.match(c.name) for c in _subdirs(p))


def _prof_devices(p: Path) -> set[int]:
    return {
        int(m.group("dev"))
        for c in _subdirs(p)
        if (m := DEVICE_DIR.match(c.name)) and fits_device(m.group("dev"))
    }


def _prof_time(p: Path) -> datetime | None:
    m = PROF_NAME.match(p.name)
    if not m:
        return None
    ts = m.group("ts")
    for fmt, n in (("%Y%m%d%H%M%S%f", 17), ("%Y%m%d%H%M%S", 14)):
        if len(ts) == n:
            try:
                return datetime.strptime(ts[:14] + (ts[14:] + "000" if n == 17 else ""), fmt)
            except ValueError:
                return None
    return None


def job_children(p: Path) -> list[Path]:
    """The ``PROF_*`` children of ``p`` when they are one job (see the module doc), else []."""
    profs = [c for c in _subdirs(p) if is_prof_dir(c)]
    if len(profs) < 2:
        return []
    seen: set[int] = set()
    for c in profs:
        devs = _prof_devices(c)
        if devs & seen:
            return []
        seen |= devs
    times = [_prof_time(c) for c in profs]
    if any(t is None for t in times) or (max(times) - min(times)).total_seconds() > JOB_WINDOW_S:
        return []
    return profs


def _default_tag_files(p: Path) -> bool:
    for d in (p, p / "data"):
        if d.is_dir() and not d.is_symlink():
            for f in _entries(d):
                hit = match(f.name)
                if hit and hit[0] in ("hwts", "training_trace") and "profiler_default_tag" in f.name:
                    return True
    return False


def _gen23_collection(p: Path) -> bool:
    data = p / "data"
    if not data.is_dir() or data.is_symlink():
        return False
    return any(
        (hit := match(f.name)) and hit[0] in ("hwts", "stars_soc", "ffts_profile") for f in _entries(data)
    )


def detect(p: Path) -> str | None:
    p = Path(p)
    if not p.is_dir():
        return None
    if is_prof_dir(p):
        return "msprof_prof"
    if job_children(p):
        return "msprof_job"
    if _default_tag_files(p):
        return "profiler_default_tag"
    if _gen23_collection(p):
        return "msprof_result_dir"
    return None


# --- scanning ----------------------------------------------------------------------------


def _control(d: Path) -> dict[str, dict[int | None, Path]]:
    control: dict[str, dict[int | None, Path]] = {k: {} for k in CONTROL}
    for p in _entries(d):
        for kind, rx in CONTROL.items():
            m = rx.match(p.name)
            if m and p.is_file() and fits_device(m.group("dev")):  # (one that does not fit is unknown)
                dev = m.group("dev")
                control[kind][int(dev) if dev is not None else None] = p
    return control


def _scan_collection(root: Path, d: Path, device_id: int, data_dirs: list[Path]) -> CollectionDir:
    cd = CollectionDir(d, relative(root, d) if d != root else "", device_id, _control(d))
    streams: dict[tuple, Stream] = {}
    listed: dict[Path, list[str]] = {}  # each data folder's entries, for the gone slices below
    for data in data_dirs:
        if not data.is_dir() or data.is_symlink():
            continue
        if data.name == "data":
            cd.has_data = True
        entries = _entries(data)
        listed[data] = [p.name for p in entries]
        for p in entries:
            if _IGNORED.match(p.name) or (p.is_dir() and data == d):
                continue
            if data == d and any(rx.match(p.name) for rx in CONTROL.values()):
                continue
            hit = match(p.name)
            legacy = None if hit else _legacy_match(p.name)
            if hit is None and legacy is None:
                if p.is_dir():
                    cd.unknown.append(relative(root, p) + "/")
                elif KNOWN_UNREAD.match(p.name):
                    cd.unread.append(relative(root, p))
                else:
                    cd.unknown.append(relative(root, p))
                continue
            if not inside(root, p):
                cd.not_files.append(relative(root, p))
                continue
            if legacy is not None:
                cd.legacy.append((legacy[0], legacy[1], p))
                continue
            kind, g = hit
            if not fits_device(g.get("dev")):
                cd.bad_device.append(relative(root, p))
                continue
            dev = int(g["dev"]) if g.get("dev") is not None else device_id
            key = (kind, dev, g.get("family") or "")
            s = streams.setdefault(key, Stream(kind, dev, g.get("family") or ""))
            s.files.append(SliceFile(p, relative(root, p), p.stat().st_size))
            s.slice_numbers.append(int(g["n"]))
    for s in streams.values():
        order = sorted(range(len(s.files)), key=lambda i: s.slice_numbers[i])
        s.files = [s.files[i] for i in order]
        s.slice_numbers = [s.slice_numbers[i] for i in order]
    for data, names in listed.items():
        for name, size, (kind, g) in gone_slices(data, names, match):
            dev = int(g["dev"]) if g.get("dev") is not None and fits_device(g["dev"]) else device_id
            kept = streams.get((kind, dev, g.get("family") or ""))
            # the collector deletes the oldest slices of a stream that ages when its storage
            # fills (docs/formats.md#aging): a gone slice before the first one kept is aged
            if kept and not NEVER_AGED.search(name) and int(g["n"]) < kept.slice_numbers[0]:
                continue
            cd.gone.append((relative(root, data / name), size, dev))
    # unaging before aging (the C++ host loader's order); device streams by kind
    cd.streams = sorted(streams.values(), key=lambda s: (s.kind, s.device_id, s.family != "unaging"))
    return cd


# What msprof writes into a directory it parsed (docs/formats.md#dir-prof): output, not raw input.
MSPROF_OUTPUT = re.compile(r"^(sqlite|summary|timeline|log|mindstudio_profiler_output)$|^msprof_.*\.db$")


def _others(root: Path, d: Path, cd: CollectionDir | None) -> tuple[list[str], list[str]]:
    """Entries of ``d`` that are neither control files, markers, ``data/`` nor collection dirs."""
    unknown, unread = [], []
    for p in _entries(d):
        if p.name in ("data", "host") or DEVICE_DIR.match(p.name) or _IGNORED.match(p.name):
            continue
        if d == root and p.name == TAGS_FILE:  # the run's tags, read by the jobs
            continue
        if cd is not None and any(rx.match(p.name) for rx in CONTROL.values()):
            continue
        rel = relative(root, p) + ("/" if p.is_dir() else "")
        (unread if MSPROF_OUTPUT.match(p.name) else unknown).append(rel)
    return unknown, unread


def _scan_prof(root: Path, prof: Path) -> list[CollectionDir]:
    out = []
    bad_device = []
    for c in _subdirs(prof):
        if c.name == "host":
            cd = _scan_collection(root, c, HOST_ID, [c / "data"])
        elif (m := DEVICE_DIR.match(c.name)) and not fits_device(m.group("dev")):
            bad_device.append(relative(root, c) + "/")
            continue
        elif m:
            cd = _scan_collection(root, c, int(m.group("dev")), [c / "data"])
        else:
            continue
        unknown, unread = _others(root, c, cd)
        cd.unknown += unknown
        cd.unread += unread
        out.append(cd)
    if bad_device and not out:  # nothing else to read: the dump's issues still need a home
        out.append(CollectionDir(prof, relative(root, prof) if prof != root else "", -1, _control(prof)))
    if out:  # entries of the PROF_* directory itself go with its first collection directory
        unknown, unread = _others(root, prof, None)
        out[0].unknown += unknown
        out[0].unread += unread
        out[0].bad_device += bad_device
    return out


def scan(root: Path, layout: str | None = None) -> ProfDump:
    root = Path(root)
    layout = layout or detect(root)
    if layout == "msprof_prof":
        return ProfDump(root, layout, _scan_prof(root, root), [""])
    if layout == "msprof_job":
        children = job_children(root)
        cols = [c for prof in children for c in _scan_prof(root, prof)]
        return ProfDump(root, layout, cols, [relative(root, c) for c in children])
    if layout == "profiler_default_tag":
        return ProfDump(root, layout, [_scan_collection(root, root, -1, [root, root / "data"])], [])
    if layout == "msprof_result_dir":
        return ProfDump(root, layout, [_scan_collection(root, root, -1, [root / "data"])], [])
    raise ValueError(f"{root} is not a generation-2/3 dump")


def control_files(dump: ProfDump) -> list[tuple[str, Path]]:
    """(kind, path) of every control file of the dump, in a stable order."""
    out = []
    for cd in dump.collections:
        for kind, by_dev in cd.control.items():
            for _, p in sorted(by_dev.items(), key=lambda kv: (kv[0] is not None, kv[0] or 0)):
                out.append((kind, p))
    return sorted(out, key=lambda kp: relative(dump.root, kp[1]))
