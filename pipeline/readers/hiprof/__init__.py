"""Layout generation 1: the hiprof-era single-directory ``result_dir`` (Ascend310, chip 0)."""

from pipeline.readers.hiprof.files import is_result_dir
from pipeline.readers.hiprof.reader import read_result_dir

__all__ = ["is_result_dir", "read_result_dir"]
