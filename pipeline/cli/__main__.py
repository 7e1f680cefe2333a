"""``python -m pipeline.cli``: the same command line as ``profetl``."""

from pipeline.cli.main import main

main()
