"""The warehouse: the entry (``store``: ``Warehouse``, which hands out a snapshot of the run
index and the writer), the run index and its snapshot (``index``: ``RunIndex``), the writer
(``writer``: the lock, placing, the commit, drop), compaction into group files
(``compaction``), the upgrade from profetl 0.2 (``upgrade``), the path scheme (``layout``), the
parts' commit records (``commit_records``) and ``check``, Parquet part files (``sink``,
``part_rows``), the table contracts (``contracts``), crash points (``faults``) and the read
side's views over committed runs (``views``). Which raw rows a device's build reads is the
jobs' rule (``pipeline/jobs/raw_reads.py``); which workload a run is, a rule of its own
(``pipeline/workload.py``)."""
