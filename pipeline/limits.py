"""The build's resource defaults, in a module of their own: the commands' option defaults and
`pipeline.jobs.runner` read them without loading DuckDB."""

# DuckDB's memory limit for a build; it spills to disk beyond it. A small limit keeps a build's peak nearly flat as
# dumps grow, because the rest of the peak (Python, Arrow, DuckDB's memory outside the pool) is
# about the same for every size; the measurements behind the value are in bench/HISTORY.md.
DEFAULT_MEMORY_LIMIT = "320MB"
