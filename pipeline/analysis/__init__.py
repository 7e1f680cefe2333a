"""Runs side by side: which runs (``selection``), their per-run statistics (``run_stats``), a run
against others (``compare``) and one metric over time (``trend``)."""
