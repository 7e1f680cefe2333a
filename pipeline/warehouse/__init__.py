"""The warehouse: its folders and commit protocol (``store``), Parquet part files (``sink``), the
table contracts (``contracts``), crash points (``faults``), the read side's views over committed
runs (``views``) and one run's raw tables for a build (``raw_reads``)."""
