"""Per-distinct-value mapping: the same result as mapping every element one by one."""

import numpy as np
import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pipeline.readers.distinct import distinct, map_distinct, merge_by_mask

ints = hnp.arrays(np.uint64, st.integers(0, 300), elements=st.integers(0, 2**64 - 1) | st.integers(0, 5))
names = hnp.arrays(
    "S6", st.integers(0, 300), elements=st.sampled_from([b"", b"a", b"a\0b", b"abc\xff", b"\0\0x"])
)


@given(ints)
def test_map_distinct_is_elementwise(values):
    calls = []

    def fn(v):
        calls.append(v)
        return f"<{v}>"

    assert map_distinct(values, fn).to_pylist() == [f"<{int(v)}>" for v in values]
    assert sorted(calls) == sorted({int(v) for v in values})  # once per distinct value


@given(ints)
def test_map_distinct_text_with_nulls_and_repeated_results(values):
    """Text comes back as a dictionary array; None is NULL (not a NULL inside the dictionary,
    which Parquet writers handle apart), and two values mapped to one text stay equal."""
    fn = lambda v: None if v % 3 == 0 else f"n{v % 2}"  # noqa: E731 - many values, two texts
    got = map_distinct(values, fn)
    assert pa.types.is_dictionary(got.type) and got.type.index_type == pa.int32()
    assert got.dictionary.null_count == 0
    assert got.to_pylist() == [fn(int(v)) for v in values]


@given(names)
def test_distinct_of_fixed_width_bytes_keeps_every_byte(values):
    uniq, index = distinct(values)
    assert len(set(uniq)) == len(uniq)
    assert [uniq[i] for i in index] == [bytes(v).ljust(6, b"\0") for v in values]


@given(hnp.arrays(bool, st.integers(0, 200)))
def test_merge_by_mask_puts_each_side_in_its_places(mask):
    true_values = pa.array([f"t{i}" for i in range(int(mask.sum()))], pa.string())
    false_values = pa.array([f"f{i}" for i in range(int((~mask).sum()))], pa.string())
    got = merge_by_mask(mask, true_values, false_values).to_pylist()
    t, f = iter(true_values.to_pylist()), iter(false_values.to_pylist())
    assert got == [next(t) if m else next(f) for m in mask]


@given(hnp.arrays(bool, st.integers(0, 200)))
def test_merge_by_mask_of_dictionary_and_plain_text(mask):
    """Names decoded as text on one side, mapped from hash ids (a dictionary) on the other."""
    n_true = int(mask.sum())
    true_values = pa.array([f"t{i % 3}" for i in range(n_true)], pa.string())
    false_values = map_distinct(np.arange(int((~mask).sum())) % 4, lambda v: f"f{v}")
    got = merge_by_mask(mask, true_values, false_values).to_pylist()
    t, f = iter(true_values.to_pylist()), iter(false_values.to_pylist())
    assert got == [next(t) if m else next(f) for m in mask]
