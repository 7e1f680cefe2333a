"""What leaves the warehouse: table exports (``export``) and their row formats (``formats``), the
``query`` command (``query``), the terminal sections of ``show`` (``sections``), how a value
shows in a terminal table (``cells``), a run's Chrome trace (``trace``) and trend plots
(``plot``)."""
