"""The warehouse: its folders and commit protocol (``store``), Parquet part files (``sink``), the
table contracts (``contracts``) and crash points (``faults``), and the
read side's views over committed runs (``views``)."""
