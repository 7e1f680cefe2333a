"""Text from the data prints as text: no rich markup, no emoji codes, control characters escaped."""

from __future__ import annotations

import json

from pipeline.synth.hiprof import HiprofConfig, generate
from tests.helpers.warehouse_checks import profetl


def test_markup_and_escapes_in_paths_and_names_print_as_text(tmp_path):
    dump = tmp_path / "night [/b] [bold]x\x1b[31m\u202eevil"
    generate(dump, HiprofConfig(inferences=1, seed=5))
    wh = tmp_path / "wh"
    ran = profetl("run", dump, "--warehouse", wh)
    assert ran.returncode == 0, ran.stderr
    for p in (ran, profetl("runs", "--warehouse", wh)):
        assert p.returncode == 0, p.stderr
        assert "[/b] [bold]x" in p.stdout.replace("\n", "")
        assert "\\x1b[31m" in p.stdout and "\\u202e" in p.stdout
        assert "\x1b" not in p.stdout + p.stderr and "\u202e" not in p.stdout + p.stderr
    as_json = profetl("runs", "--warehouse", wh, "--json")
    assert json.loads(as_json.stdout)[0]["source_path"] == str(dump)

    q = profetl(
        "query",
        "select 'Re[i]lu :smile: [/b]' || chr(27) || '[2J' || chr(10) || 'x' as \"op [b]\"",
        "--warehouse",
        wh,
    )
    assert q.returncode == 0, q.stderr
    assert "Re[i]lu :smile: [/b]\\x1b[2J\\x0ax" in q.stdout and "op [b]" in q.stdout
    assert "\x1b" not in q.stdout

    bad = profetl("show", "[/b]\x1b[1m", "--warehouse", wh)
    assert bad.returncode != 0 and "\x1b" not in bad.stderr and "MarkupError" not in bad.stderr
