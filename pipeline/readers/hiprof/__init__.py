"""Layout generation 1: the hiprof-era single-directory ``result_dir`` (Ascend310, chip 0).

Detection only; ``reader.read_result_dir`` is imported where a dump is read.
"""

from pipeline.readers.hiprof.files import is_result_dir

__all__ = ["is_result_dir"]
