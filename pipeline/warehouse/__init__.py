"""The warehouse: the run index and its writer (``store``), compaction into group files
(``compaction``), the upgrade from profetl 0.2 (``upgrade``), the path scheme (``layout``), the
parts' commit records (``commit_records``) and ``check``, Parquet part files (``sink``,
``part_rows``), the table contracts (``contracts``), crash points (``faults``) and the read
side's views over committed runs (``views``). Which raw rows a device's build reads is the
jobs' rule (``pipeline/jobs/raw_reads.py``)."""
