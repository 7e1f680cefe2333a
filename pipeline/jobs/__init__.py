"""The work that writes the warehouse: find dumps (``dumps``), ingest one (``ingest``), build its
marts with the SQL files (``build``, ``transforms``), and the units the commands run (``runner``)."""
