"""profetl: Ascend NPU profiling dumps into a Parquet warehouse and analysis tables.

The package is a library: nothing here prints or exits. The command line lives in
``pipeline.cli`` and is a thin layer over the packages ``jobs`` (ingest and build),
``outputs`` (export, query, show, timeline, plots), ``analysis`` (compare, trend),
``warehouse`` (storage, commit, read views) and ``synth``. Each folder is one layer;
docs/architecture.md says what each may use.
"""

__version__ = "0.6.0"
