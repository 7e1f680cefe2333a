"""Layout generation 4: what msprof and the torch_npu profiler exported, read when the raw data is gone.

Sources, most detailed first (docs/formats.md#export-files): the unified SQLite
database (``msprof_*.db``, ``ascend_pytorch_profiler*.db``), the event timeline
(``trace_view.json``, ``msprof_*.json``, per-device ``timeline/*.json``), the summary CSVs
(``kernel_details``, ``op_summary``, ``task_time``, ...). ``reader.read_export`` (imported where a dump is read: detecting one needs only
``files``) picks, per
canonical table, the most detailed source present and records the choice on the run.
"""

from pipeline.readers.exported.files import LAYOUTS, detect, exports_of_raw, nested_runs, scan

__all__ = ["LAYOUTS", "detect", "exports_of_raw", "nested_runs", "scan"]
