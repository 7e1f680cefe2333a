"""Layout generation 4: what msprof and the torch_npu profiler exported, read when the raw data is gone.

Sources, most detailed first (ARCHITECTURE.md, "Raw layout generations" 4): the unified SQLite
database (``msprof_*.db``, ``ascend_pytorch_profiler*.db``), the event timeline
(``trace_view.json``, ``msprof_*.json``, per-device ``timeline/*.json``), the summary CSVs
(``kernel_details``, ``op_summary``, ``task_time``, ...). ``reader.read_export`` picks, per
canonical table, the most detailed source present and records the choice on the run.
"""

from pipeline.readers.export.files import LAYOUTS, detect, exports_of_raw, scan
from pipeline.readers.export.reader import profiler_info_start_us, read_export, session_start_us

__all__ = ["LAYOUTS", "detect", "exports_of_raw", "scan", "read_export", "session_start_us", "profiler_info_start_us"]
