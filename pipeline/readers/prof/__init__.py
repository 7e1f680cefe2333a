"""Layout generations 2 and 3: msprof ``PROF_*`` trees (HWTS and STARS chips, CANN 7+ host data)."""

from pipeline.readers.prof.files import control_files, detect, scan
from pipeline.readers.prof.meta import ReadOptions
from pipeline.readers.prof.reader import read_prof

LAYOUTS = ("msprof_prof", "msprof_job", "profiler_default_tag", "msprof_result_dir")

__all__ = ["LAYOUTS", "ReadOptions", "control_files", "detect", "read_prof", "scan"]
