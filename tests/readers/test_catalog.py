"""Every reader has the one face the jobs use (pipeline/readers/catalog.py), and each layout has
exactly one reader."""

from __future__ import annotations

import inspect

import pytest

from pipeline.readers import catalog


@pytest.mark.parametrize("reader", catalog.READERS, ids=lambda r: r.__name__.rsplit(".", 1)[-1])
def test_every_reader_has_the_face(reader):
    missing = [name for name in catalog.FACE if not hasattr(reader, name)]
    assert not missing, f"{reader.__name__} lacks {missing}"
    for name in catalog.FACE[1:]:
        assert callable(getattr(reader, name))
    params = list(inspect.signature(reader.read).parameters)
    assert params[:6] == ["scanned", "sink", "log", "unit", "first", "workdir"]


def test_each_layout_has_one_reader():
    layouts = [layout for r in catalog.READERS for layout in r.LAYOUTS]
    assert len(layouts) == len(set(layouts))
    for r in catalog.READERS:
        for layout in r.LAYOUTS:
            assert catalog.reader_of(layout) is r
    with pytest.raises(ValueError):
        catalog.reader_of("no_such_layout")
