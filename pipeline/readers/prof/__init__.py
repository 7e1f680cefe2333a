"""Layout generations 2 and 3: msprof ``PROF_*`` trees (HWTS and STARS chips, CANN 7+ host data).

Detection and file lists only; ``reader.read_prof`` is imported where a dump is read.
"""

from pipeline.readers.prof.files import control_files, detect, scan

LAYOUTS = ("msprof_prof", "msprof_job", "profiler_default_tag", "msprof_result_dir")

__all__ = ["LAYOUTS", "control_files", "detect", "scan"]
