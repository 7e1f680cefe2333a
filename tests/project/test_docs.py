"""docs/ is generated from the code and must not go stale; every command and column is documented."""

from __future__ import annotations

import pytest

from pipeline import docs
from pipeline.cli.main import COMMANDS
from pipeline.jobs.runner import ingest_dump
from pipeline.synth import hiprof
from pipeline.warehouse.contracts import contracts
from pipeline.warehouse.store import Warehouse

FIX = "run `python -m pipeline.docs` and commit docs/"


@pytest.mark.parametrize("name", ["tables.md", "cli.md"])
def test_generated_docs_are_current(name):
    path = docs.DOCS_DIR / name
    assert path.exists(), f"docs/{name} is missing: {FIX}"
    assert path.read_text(encoding="utf-8") == docs.expected()[path], f"docs/{name} is stale: {FIX}"


@pytest.mark.parametrize("name", list(COMMANDS))
def test_every_command_is_documented_with_an_example(name):
    text = (docs.DOCS_DIR / "cli.md").read_text(encoding="utf-8")
    assert f"## profetl {name}\n" in text
    section = text.split(f"## profetl {name}\n", 1)[1].split("\n## ", 1)[0]
    assert "Example: profetl" in section and f"Usage: profetl {name}" in section


def test_every_exit_code_is_documented():
    """Each code of ExitCode appears in the exit-code lines of README.md and docs/cli.md."""
    import re
    from pathlib import Path

    from pipeline.errors import ExitCode

    codes = sorted(v for k, v in vars(ExitCode).items() if k.isupper())
    for path in (Path(__file__).parents[2] / "README.md", docs.DOCS_DIR / "cli.md"):
        text = path.read_text(encoding="utf-8")
        line = " ".join(text.split("Exit codes:", 1)[1].split("\n\n", 1)[0].split())
        documented = sorted(
            int(n) for n in re.findall(r"`?(\d+)`? (?:done|a |usage|the |`compare`|interrupted)", line)
        )
        assert documented == codes, f"{path.name}: exit codes {documented}, ExitCode has {codes}"


def test_every_table_and_column_has_a_meaning():
    text = (docs.DOCS_DIR / "tables.md").read_text(encoding="utf-8")
    for layer in ("raw", "marts"):
        for name, c in contracts(layer).items():
            assert f"### {name}\n" in text, f"{name} is not in docs/tables.md"
            for row in docs.column_rows(c):
                assert row["meaning"], (
                    f"{layer} {name}.{row['name']} has no meaning (contract, SQL header or glossary)"
                )
                if layer == "marts":
                    assert not row["glossary"], (
                        f"{name}.{row['name']}: mart columns are documented in the SQL header"
                    )
                    assert row["name"] == "run_id" or row["display"], (
                        f"{name}.{row['name']} has no display header"
                    )
    for name in ("collected_at", "workload"):
        assert f"| `{name}` |" in text  # the runs view's own columns


def _prof_generate():
    try:
        from pipeline.synth import prof
    except ImportError:  # pragma: no cover - generations 2/3 not present
        return None
    return prof


@pytest.mark.slow
def test_generations_list_exactly_the_tables_synthetic_runs_fill(tmp_path):
    gens = docs.generations()
    cases = {
        1: [
            ("hiprof", hiprof.HiprofConfig(devices=2, drop_complete=1, training=True)),
            ("hiprof", hiprof.HiprofConfig(aicore=False, memcpy=False, step_trace=False)),
        ]
    }
    prof = _prof_generate()
    if prof is not None:
        cases[2] = [
            ("prof", prof.ProfConfig(chip="ascend910a", training=True, aicpu="text")),
            ("prof", prof.ProfConfig(chip="ascend310p")),
            ("prof", prof.ProfConfig(chip="ascend310p", sample_based=True)),
        ]
        cases[3] = [("prof", prof.ProfConfig(chip="ascend910b", training=True))]
    wh = Warehouse(tmp_path / "wh")
    for number, configs in cases.items():
        filled: set[str] = set()
        for i, (kind, cfg) in enumerate(configs):
            out = tmp_path / f"g{number}-{i}"
            t = (hiprof if kind == "hiprof" else prof).generate(out, cfg)
            with wh.writer():
                o = ingest_dump(wh, out / getattr(t, "root", ""))
            run = wh.run_index().run_record(o.run_id)
            assert run["layout_generation"] == number
            filled |= set(run["tables_filled"])
        declared = next(g for g in gens["generation"] if g["number"] == number)["tables"]
        assert sorted(filled - set(gens["always"])) == sorted(declared), (
            f"schemas/generations.toml: generation {number} lists {sorted(declared)}, synthetic runs fill {sorted(filled)}"
        )
    every = set(contracts("raw")) | set(contracts("marts"))
    listed = set(gens["always"]).union(*(g["tables"] for g in gens["generation"]))
    assert listed <= every and every <= listed, f"tables no generation lists: {sorted(every - listed)}"
