"""Binary record layouts, written down once and shared by the readers and ``synth``.

Every layout is a little-endian numpy structured dtype with explicit offsets, so a
whole slice decodes with one ``np.frombuffer`` and a generator fills a zeroed array
of the same dtype. Fields may overlap where the producer struct has a union (a name
stored either as a string or as a hash id).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

HOST_MAGIC = 0x5A5A  # first u16 of every legacy host record (docs/formats.md#conventions)


@dataclass(frozen=True)
class Layout:
    """A fixed-size record: its name, the dtype that reads and writes it, and its tag."""

    name: str
    dtype: np.dtype
    tag: int | None = None  # TLV tag or host dataTag, where the record has one

    @property
    def size(self) -> int:
        return self.dtype.itemsize

    def zeros(self, n: int) -> np.ndarray:
        return np.zeros(n, dtype=self.dtype)

    def with_size(self, size: int) -> np.dtype:
        """The same fields in a record of ``size`` bytes (TLV records may be longer)."""
        if size == self.size:
            return self.dtype
        d = self.dtype
        return np.dtype(
            {
                "names": list(d.names),
                "formats": [d.fields[n][0] for n in d.names],
                "offsets": [d.fields[n][1] for n in d.names],
                "itemsize": size,
            }
        )


def struct(fields: list[tuple[str, str, int]], size: int) -> np.dtype:
    """A dtype from ``(name, format, offset)`` triples and the record size in bytes."""
    return np.dtype(
        {
            "names": [f[0] for f in fields],
            "formats": [f[1] for f in fields],
            "offsets": [f[2] for f in fields],
            "itemsize": size,
        }
    )
