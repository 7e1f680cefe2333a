"""The ``profetl`` command line: a thin Typer layer over the library."""
