"""profetl: Ascend NPU profiling dumps into a Parquet warehouse and analysis tables.

The package is a library: nothing here prints or exits. The command line lives in
``pipeline.cli`` and is a thin layer over the functions exported by the modules
``ingest``, ``build``, ``export``, ``query``, ``warehouse`` and ``synth``.
"""

__version__ = "0.2.0"
