"""The build's resource defaults, in a module of their own: the commands' option defaults and
`pipeline.jobs` read them without loading DuckDB."""

# DuckDB spills beyond it. The default keeps a build's peak flat as dumps grow: a 2 GB dump's
# build peaks at the limit plus ~330 MB (Python, Arrow and DuckDB's allocations outside its buffer
# pool), a 500 MB dump's a little below that at 320 MB (bench/, 2 cores: 620-650 MB) but higher at
# higher limits, as it spills less (500 MB STARS, an earlier round: 480 MB 695, 640 MB 811). 512 MB
# gave the 2 GB build 1.2-1.3x the 500 MB peak, 352 MB 1.07-1.10x, at the edge of the 10 % target;
# 320 MB 1.03-1.08x, median of 3, and 1.07-1.12x in later rounds, whose 500 MB builds sort less
# (bench/HISTORY.md: what grows is DuckDB's working memory beside its pool while sorting).
DEFAULT_MEMORY_LIMIT = "320MB"
