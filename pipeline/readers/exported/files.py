"""Finding exported outputs: which files a dump holds, what each is, and which device it describes.

An export dump is one of
* a torch_npu rank folder (``*_ascend_pt``, ``rank*``): ``ASCEND_PROFILER_OUTPUT/`` beside
  ``profiler_info*.json`` (layout ``torch_npu_export``);
* a msprof ``PROF_*`` folder, or a job folder of several, whose raw ``data/`` is gone but
  whose ``mindstudio_profiler_output/``, ``msprof_*.db`` or ``device_N/timeline/*.json`` remain
  (layout ``msprof_export``);
* any folder holding export files directly, as users copy them around (``export_files``).

File names carry timestamps (``op_summary_20260601142441.csv``), slice numbers
(``_slice_1``), devices and iterations (``msprof_0_2_1.json``): the patterns below take all of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.paths import TAGS_FILE
from pipeline.readers.hiprof.files import is_result_dir

LAYOUTS = ("torch_npu_export", "msprof_export", "export_files")

TORCH_DIR = "ASCEND_PROFILER_OUTPUT"
MSPROF_DIR = "mindstudio_profiler_output"

_T = r"(?:_\d+)*(?:_slice_\d+)?(?:_\d+)*"  # timestamps, device / model / iteration numbers, slices

# kind -> file name pattern. The order of kinds inside a group is the reader's preference.
DATABASES = {
    "msprof_db": re.compile(rf"^msprof{_T}\.db$"),
    "pytorch_db": re.compile(rf"^ascend_pytorch_profiler{_T}\.db$"),
    "report_db": re.compile(rf"^report{_T}\.db$"),  # the pre-2024 name of the unified database
    # torch_npu's derived analysis: its StepTraceTime is read when the export has no step events
    "analysis_db": re.compile(r"^analysis\.db$"),
}
TIMELINES = {
    "trace_view": re.compile(r"^trace_view\.json$"),
    "msprof_json": re.compile(rf"^msprof{_T}\.json$"),
    "task_time_json": re.compile(rf"^task_time{_T}\.json$"),
    "step_trace_json": re.compile(rf"^step_trace{_T}\.json$"),
    # msprof's per-iteration communication tasks (HCCL process, Plane threads): comm_tasks
    "hccl_json": re.compile(rf"^hccl{_T}\.json$"),
}
SUMMARIES = {
    "kernel_details": re.compile(rf"^kernel_details{_T}\.csv$"),
    "op_summary": re.compile(rf"^op_summary{_T}\.csv$"),
    "task_time_csv": re.compile(rf"^task_time{_T}\.csv$"),
    "api_statistic": re.compile(rf"^api_statistic{_T}\.csv$"),
    "op_statistic": re.compile(rf"^op_statistic{_T}\.csv$"),
    "step_trace_time": re.compile(rf"^step_trace_time{_T}\.csv$"),
    # msprof's AI CPU task summary (not aicpu_mi_*, its data queue, which stays not read)
    "aicpu": re.compile(rf"^aicpu{_T}\.csv$"),
}
CONTROLS = {
    "profiler_info": re.compile(r"^profiler_info(?:_\d+)?\.json$"),
    "profiler_metadata": re.compile(r"^profiler_metadata\.json$"),
    "info_json": re.compile(r"^info\.json(?:\.\d+)?$"),
    "start_info": re.compile(r"^start_info(?:\.\d+)?$"),
    "end_info": re.compile(r"^end_info(?:\.\d+)?$"),
}
# Files exporters write that hold nothing profetl's tables take, with the reason reported.
NOT_READ = [
    (
        re.compile(rf"^(api_statistic|step_trace_time){_T}\.csv$"),
        "totals of events this export holds: recomputed from the events, which were read instead",
    ),
    (
        re.compile(rf"^op_statistic{_T}\.csv$"),
        "totals recomputed from the task rows (kept as a consistency check)",
    ),
    (
        re.compile(r"^analysis\.db$"),
        "torch_npu's derived analysis (step breakdown, communication matrix): its step breakdown is "
        "read only when the export has no step events, which were read instead",
    ),
    (re.compile(rf"^communication{_T}.*\.json$"), "communication data: not part of profetl's tables"),
    (re.compile(r"^communication(_matrix)?\.json$"), "communication data: not part of profetl's tables"),
    (
        re.compile(
            rf"^(npu_module_mem|memory_record|operator_memory|npu_mem|static_op_mem|memory_?\w*){_T}\.csv$"
        ),
        "memory records: not part of profetl's tables",
    ),
    (
        re.compile(
            rf"^(operator_details|l2_cache|ai_cpu|fusion_op|aicpu\w*|communication_statistic|"
            rf"hccl_statistic|dp_statistic|prof_rule\w*|\w+_statistic){_T}\.csv$"
        ),
        "summary not used by profetl's tables",
    ),
    (re.compile(r".*\.(txt|log|md)$", re.I), "notes or logs, not profiling data"),
    (re.compile(r".*\.done$"), "completion marker"),
    (re.compile(r".*\.(db-journal|db-wal|db-shm)$"), "SQLite side file"),
]


def classify(name: str) -> tuple[str, str] | None:
    """(group, kind) of an export file name; group is database, timeline, summary or control."""
    for group, kinds in (
        ("database", DATABASES),
        ("timeline", TIMELINES),
        ("summary", SUMMARIES),
        ("control", CONTROLS),
    ):
        for kind, rx in kinds.items():
            if rx.match(name):
                return group, kind
    return None


def not_read_reason(name: str) -> str | None:
    for rx, why in NOT_READ:
        if rx.match(name):
            return why
    return None


@dataclass
class ExportFile:
    path: Path
    group: str  # database | timeline | summary | control
    kind: str
    device_id: int | None = None  # from the path (device_N/), when it says
    # size and modification time measured once, when the dump was scanned: what is read is
    # bounded by them (docs/formats.md#live-dumps); None for a file that could not be stat'ed
    size: int | None = None
    mtime_ns: int | None = None


@dataclass
class ExportDump:
    root: Path
    layout: str
    files: list[ExportFile] = field(default_factory=list)
    others: list[Path] = field(default_factory=list)  # files of no export kind
    # PROF_* folders inside a torch_npu export, not read with it: those still holding raw data are
    # runs of their own (nested_runs), those holding only msprof's exports are not runs at all
    nested: list[Path] = field(default_factory=list)

    def of(self, *kinds: str) -> list[ExportFile]:
        return [f for f in self.files if f.kind in kinds]


_DEVICE_DIR = re.compile(r"^device_(\d+)$")
_MAX_DEPTH = 4


def _export_files_in(d: Path) -> bool:
    try:
        return any(p.is_file() and (classify(p.name) or ("control",))[0] != "control" for p in d.iterdir())
    except OSError:
        return False


def _has_raw_data(d: Path) -> bool:
    """A PROF_* tree whose device_N/ or host/ still has data/: the raw readers take it."""
    for sub in ("host", *[p.name for p in _dirs(d) if _DEVICE_DIR.match(p.name)]):
        data = d / sub / "data"
        try:
            if data.is_dir() and any(data.iterdir()):
                return True
        except OSError:
            continue
    return False


def _raw_here(d: Path) -> bool:
    """``d`` still has raw data of some generation: it is a generation-1 result_dir (``data/``
    with hiprof-era files), or it or a PROF_* folder directly in it has host/ or device_N/ data/."""
    return (
        _has_raw_data(d)
        or is_result_dir(d)
        or any(_has_raw_data(c) for c in _dirs(d) if c.name.startswith("PROF_"))
    )


def exports_of_raw(d: Path) -> bool:
    """``d`` is a mindstudio_profiler_output/ beside raw data: the export of that data, not a dump."""
    return d.name == MSPROF_DIR and _raw_here(d.parent)


def _dirs(d: Path) -> list[Path]:
    try:
        return sorted(p for p in d.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return []


def _msprof_export(d: Path) -> bool:
    """A PROF_* folder keeping only exported outputs."""
    if not d.name.startswith("PROF_") or _has_raw_data(d):
        return False
    if (d / MSPROF_DIR).is_dir() or _export_files_in(d):
        return True
    return any(
        _export_files_in(dev / "timeline") or _export_files_in(dev / "summary")
        for dev in _dirs(d)
        if _DEVICE_DIR.match(dev.name)
    )


def detect(p: Path) -> str | None:
    p = Path(p)
    if not p.is_dir():
        return None
    if (p / TORCH_DIR).is_dir() and _export_files_in(p / TORCH_DIR):
        return "torch_npu_export"
    if _raw_here(p):  # msprof writes its database and exports beside data/: the raw readers take it
        return None
    if _msprof_export(p) or ((p / MSPROF_DIR).is_dir() and _export_files_in(p / MSPROF_DIR)):
        return "msprof_export"
    children = [c for c in _dirs(p) if c.name.startswith("PROF_")]
    if children and all(_msprof_export(c) for c in children):
        return "msprof_export"  # a job folder of several exported PROF_* folders
    if _export_files_in(p):
        return "export_files"
    return None


def nested_runs(dump: ExportDump) -> list[Path]:
    """The PROF_* folders inside a torch_npu export that still hold raw data (host/ or device_N/
    data/): msprof's record of the same collection, more detailed than the export, each a run of
    its own that discovery finds beside the rank folder. A PROF_* folder whose raw data is gone
    keeps only msprof's export of what ASCEND_PROFILER_OUTPUT already holds: it is not a run,
    so the collection is not counted twice."""
    return [p for p in dump.nested if _has_raw_data(p)]


def _device_from_path(rel_parts: tuple[str, ...]) -> int | None:
    for part in reversed(rel_parts):
        m = _DEVICE_DIR.match(part)
        if m:
            return int(m.group(1))
    return None


def scan(root: Path, layout: str | None = None) -> ExportDump:
    """Every file under ``root`` (links not followed), classified."""
    root = Path(root)
    dump = ExportDump(root, layout or detect(root) or "export_files")

    def walk(d: Path, depth: int) -> None:
        try:
            entries = sorted(d.iterdir())
        except OSError:
            return
        for p in entries:
            if d == root and p.name == TAGS_FILE:  # the run's tags, read by the jobs
                continue
            if p.is_symlink():
                dump.others.append(p)
            elif p.is_dir():
                if dump.layout == "torch_npu_export" and p.name.startswith("PROF_"):
                    dump.nested.append(p)  # msprof's raw data or export of the same collection
                elif depth < _MAX_DEPTH:
                    walk(p, depth + 1)
                else:
                    dump.others.append(p)
            elif p.is_file():
                c = classify(p.name)
                if c is None:
                    dump.others.append(p)
                else:
                    rel = p.relative_to(root).parts[:-1]
                    try:
                        st = p.stat()
                        size, mtime_ns = st.st_size, st.st_mtime_ns
                    except OSError:
                        size = mtime_ns = None
                    dump.files.append(ExportFile(p, c[0], c[1], _device_from_path(rel), size, mtime_ns))

    walk(root, 0)
    return dump
