"""Rows out: CSV a spreadsheet reads as written, JSON lines, Parquet; files written atomically.

Every command that emits rows goes through ``write_batches`` (``write_table`` for rows
already in memory), so ``query``, ``export``, ``compare`` and ``trend`` give the same CSV,
JSON lines and Parquet for the same data. Rows are written batch by batch as they arrive:
exporting a table of millions of rows holds one batch in memory, not the table.
``out`` is a file path or ``-`` for standard output.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import secrets
import sys
from collections.abc import Callable, Iterable, Iterator
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.errors import UsageError

ROW_FORMATS = ("csv", "json", "parquet")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(v) -> str:
    """A cell a spreadsheet shows as written: NULL empty, numbers as numbers, no formulas."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        # 15 significant digits: exact for every value a double holds to that precision,
        # without binary noise such as 37.946000000000005 in the spreadsheet
        return "" if math.isnan(v) or math.isinf(v) else format(v, ".15g")
    if isinstance(v, (int, Decimal)):
        return str(v)
    if isinstance(v, datetime):
        return v.isoformat()
    if isinstance(v, (list, tuple)):
        v = ",".join(str(x) for x in v)
    s = str(v)
    return "'" + s if s.startswith(_FORMULA_START) else s


def json_value(v):
    """A JSON-ready value: timestamps as ISO 8601, NaN as null."""
    if isinstance(v, (datetime, date)):
        return v.isoformat()
    if isinstance(v, float) and (math.isnan(v) or math.isinf(v)):
        return None
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, bytes):
        return v.hex()
    if isinstance(v, (list, tuple)):
        return [json_value(x) for x in v]
    if isinstance(v, dict):
        return {k: json_value(x) for k, x in v.items()}
    return v


# _FORMULA_START as a pattern for Arrow (a character class; '-' escaped)
_FORMULA_REGEX = "^[" + "".join("\\" + c if c in "-]\\^" else c for c in _FORMULA_START) + "]"
# what makes Python's csv writer (QUOTE_MINIMAL, lineterminator "\n") quote a field
_CSV_QUOTE_REGEX = '[,"\n]'


def csv_cells(column: pa.Array) -> pa.Array:
    """``csv_cell`` of every value of a column, as Arrow text without nulls. Integers,
    booleans and text are rendered by Arrow, floats by DuckDB (``_float_cells``), a column at
    a time; other types value by value."""
    ty = column.type
    if pa.types.is_integer(ty) or pa.types.is_boolean(ty):
        return pc.fill_null(pc.cast(column, pa.string()), "")
    if pa.types.is_string(ty) or pa.types.is_large_string(ty):
        column = column.cast(pa.string())  # a batch's text: one kind of string for Arrow's joins
        quoted = pc.binary_join_element_wise("'", column, "")
        text = pc.if_else(pc.match_substring_regex(column, _FORMULA_REGEX), quoted, column)
        return pc.fill_null(text, "")
    if pa.types.is_floating(ty):
        return _float_cells([column])[0]
    if pa.types.is_map(ty):  # a JSON object, keys in order: a run's tags ({"commit": "3f2a9c1"})
        return pa.array(
            ["" if v is None else json.dumps(dict(v), ensure_ascii=False) for v in column.to_pylist()],
            pa.string(),
        )
    return pa.array([csv_cell(v) for v in column.to_pylist()], pa.string())


# DuckDB formats one Arrow record batch per thread: a batch's float columns are cut into
# pieces of this many rows so that every core formats some
FLOAT_PIECE_ROWS = 16_384
_duckdb: duckdb.DuckDBPyConnection | None = None


def _duckdb_texts(columns: list[pa.Array], expression: str) -> list[pa.Array]:
    """``expression`` (SQL over a column written ``{c}``) of columns of one length, by DuckDB on
    every core (C++ rather than a Python call per value). Rows keep their order (DuckDB
    preserves the insertion order of a projection)."""
    global _duckdb
    if _duckdb is None:
        _duckdb = duckdb.connect()
    table = pa.table({f"c{i}": c for i, c in enumerate(columns)})
    pieces = pa.Table.from_batches(table.to_batches(max_chunksize=FLOAT_PIECE_ROWS), table.schema)
    text = _duckdb.from_arrow(pieces).project(
        ", ".join(expression.replace("{c}", f"c{i}") for i in range(len(columns)))
    )
    return [c.combine_chunks() for c in text.to_arrow_table().columns]


def _float_cells(columns: list[pa.Array]) -> list[pa.Array]:
    """csv_cell's float rule over columns: ``printf('%.15g')``, the digits of Python's
    ``format(v, '.15g')``, empty for NULL, NaN and infinities (one vectorised DuckDB expression
    instead of a Python call per value)."""
    return _duckdb_texts(
        columns, "case when isfinite({c}::double) then printf('%.15g', {c}::double) else '' end"
    )


def _csv_field(cells: pa.Array) -> pa.Array:
    """Cells as fields of a CSV record, quoted as Python's csv writer quotes them."""
    quoted = pc.binary_join_element_wise('"', pc.replace_substring(cells, '"', '""'), '"', "")
    return pc.if_else(pc.match_substring_regex(cells, _CSV_QUOTE_REGEX), quoted, cells)


def _csv_records(batch: pa.RecordBatch) -> pa.Buffer:
    """The batch's rows as CSV records (UTF-8), each ending in "\n", made by Arrow a column at
    a time: the same text as Python's csv writer writes of ``csv_cell`` of every value."""
    floats = [i for i, c in enumerate(batch.columns) if pa.types.is_floating(c.type)]
    float_cells = dict(zip(floats, _float_cells([batch.column(i) for i in floats]))) if floats else {}
    fields = []
    for i, column in enumerate(batch.columns):
        if i in float_cells:
            fields.append(float_cells[i])  # numbers hold no comma, quote or line break
            continue
        cells = csv_cells(column)
        numeric = pa.types.is_integer(column.type) or pa.types.is_boolean(column.type)
        fields.append(cells if numeric else _csv_field(cells))
    if len(fields) == 1:  # a record of one empty field is written as "" (not as an empty line)
        fields[0] = pc.if_else(pc.equal(fields[0], ""), '""', fields[0])
    pieces = [x for f in fields for x in (f, ",")]
    pieces[-1] = "\n"
    return _concat(pc.binary_join_element_wise(*pieces, ""))


def _concat(records: pa.Array) -> pa.Buffer:
    """Text records (no NULLs) one after the other, as UTF-8 bytes."""
    records = pc.cast(records, pa.large_string())
    one = pa.LargeListArray.from_arrays(pa.array([0, len(records)], pa.int64()), records)
    return pc.binary_join(one, pa.scalar("", pa.large_string()))[0].as_buffer()


def csv_header(header: list[str]) -> bytes:
    """The header record of a CSV (UTF-8), as Python's csv writer writes it."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow(header)
    return buf.getvalue().encode("utf-8")


def text_csv_records(batch: pa.RecordBatch) -> pa.Buffer:
    """A batch of text columns without NULLs as CSV records (UTF-8), every cell as it is
    (no formula guard: for files whose readers expect another tool's exact text), quoted as
    Python's csv writer quotes it."""
    fields = [_csv_field(c.cast(pa.string())) for c in batch.columns]
    pieces = [x for f in fields for x in (f, ",")]
    pieces[-1] = "\n"
    return _concat(pc.binary_join_element_wise(*pieces, ""))


def _csv_chunks(batches: Iterable[pa.RecordBatch], header: list[str]) -> Iterator[bytes | pa.Buffer]:
    yield csv_header(header)
    for batch in batches:
        if batch.num_rows and batch.num_columns:
            yield _csv_records(batch)


# text json.dumps writes as it is, between quotes: printable ASCII but for quote and backslash
_JSON_PLAIN_REGEX = "^[ !#-\\[\\]-~]*$"


def json_texts(column: pa.Array) -> pa.Array:
    """``json.dumps(json_value(v))`` of every value of a column, as Arrow text. Integers and
    booleans are rendered by Arrow, floats by DuckDB (its shortest round-trip text is
    Python's ``repr``), text without quotes, backslashes or non-ASCII characters by Arrow
    (other text by ``json.dumps``, value by value); other types value by value."""
    ty = column.type
    if pa.types.is_integer(ty) or pa.types.is_boolean(ty):
        return pc.fill_null(pc.cast(column, pa.string()), "null")
    if pa.types.is_floating(ty):
        return _duckdb_texts(
            [column], "case when isfinite({c}::double) then {c}::double::varchar else 'null' end"
        )[0]
    if pa.types.is_string(ty) or pa.types.is_large_string(ty):
        column = column.cast(pa.string())  # a batch's text: one kind of string for Arrow's joins
        quoted = pc.binary_join_element_wise('"', column, '"', "")
        escape = pc.invert(pc.fill_null(pc.match_substring_regex(column, _JSON_PLAIN_REGEX), True))
        if pc.any(escape).as_py():
            escaped = [json.dumps(v) for v in pc.filter(column, escape).to_pylist()]
            quoted = pc.replace_with_mask(quoted, escape, pa.array(escaped, quoted.type))
        return pc.fill_null(quoted, "null")
    if pa.types.is_map(ty):  # an object (Arrow gives (key, value) pairs); a run's tags
        return pa.array(
            ["null" if v is None else json.dumps(json_value(dict(v))) for v in column.to_pylist()],
            pa.string(),
        )
    return pa.array([json.dumps(json_value(v)) for v in column.to_pylist()], pa.string())


def _jsonl_chunks(batches: Iterable[pa.RecordBatch], names: list[str]) -> Iterator[pa.Buffer]:
    """One ``json.dumps`` of each row's {name: json_value} as a line (UTF-8), made a column at
    a time: '{"a": 1, "b": "x"}'."""
    keys = [("{" if i == 0 else ", ") + json.dumps(n) + ": " for i, n in enumerate(names)]
    for batch in batches:
        if not batch.num_rows or not names:
            continue
        pieces = [x for k, c in zip(keys, batch.columns) for x in (k, json_texts(c))] + ["}\n"]
        yield _concat(pc.binary_join_element_wise(*pieces, ""))


def csv_text(table: pa.Table, headers: list[str] | None = None) -> str:
    return b"".join(_csv_chunks(table.to_batches(), headers or table.column_names)).decode("utf-8")


def check_out_file(out: str | os.PathLike) -> Path:
    """``out`` as the path of a file to write, or UsageError: a name is given, it is not a
    folder, and its folder exists (a mistyped one is refused, not created)."""
    text = os.fspath(out)
    out = Path(out)
    if not out.name or text.endswith(os.sep):
        shown = "''" if text in ("", ".") else repr(text)  # ("" arrives as "." through a Path)
        raise UsageError(f"--out {shown}: give the name of a file to write")
    if out.is_dir():
        raise UsageError(f"cannot write {out}: it is a folder; give the name of a file in it")
    if not out.parent.is_dir():
        why = "is not a folder" if out.parent.exists() else "does not exist"
        raise UsageError(
            f"cannot write {out}: {out.parent} {why} (profetl does not create folders for --out)"
        )
    return out


def atomic_write(out: Path, write: Callable[[Path], None]) -> None:
    """Write through a temporary file beside ``out`` and rename it: whole or not at all
    (``check_out_file`` first)."""
    out = check_out_file(out)
    tmp = out.with_name(f".{out.name}.{secrets.token_hex(4)}.tmp")
    try:
        write(tmp)
        os.replace(tmp, out)
    finally:
        tmp.unlink(missing_ok=True)


# rows one sheet of a spreadsheet holds, the header row included (Excel, LibreOffice Calc):
# a CSV with more lines opens without the rest
SPREADSHEET_ROWS = 1_048_576


def spreadsheet_warning(path: str, rows: int) -> str | None:
    """The warning for a CSV of ``rows`` data rows that a spreadsheet cannot open whole, else None."""
    if rows + 1 <= SPREADSHEET_ROWS:
        return None
    lost = rows + 1 - SPREADSHEET_ROWS
    where = "standard output" if path == "-" else path
    return (
        f"{where} has {rows:,} rows and a header: a spreadsheet opens {SPREADSHEET_ROWS:,} lines and "
        f"drops the last {lost:,} rows; --max-rows {SPREADSHEET_ROWS - 1} writes numbered files that each open whole"
    )


def part_path(out: Path, k: int) -> Path:
    """The k-th (from 1) file of a CSV split by rows: ``name.csv`` -> ``name-0001.csv``,
    ``name-0002.csv``, ... (four digits at least: up to 9,999 files the names sort in order)."""
    out = Path(out)
    return out.with_name(f"{out.stem}-{k:04d}{out.suffix}")


def stale_parts(out: Path, written: int) -> list[Path]:
    """Files named as parts of ``out`` after the ``written`` ones (``part_path``): an earlier
    split into more files left them, and a reader of ``name-*.csv`` would take their rows too."""
    out = Path(out)
    found = []
    k = written + 1
    while part_path(out, k).exists():
        found.append(part_path(out, k))
        k += 1
    return found


def csv_slices(
    batches: Iterable[pa.RecordBatch],
    head: bytes,
    max_rows: int,
    temp_path: Callable[[int], Path],
    encode: Callable[[pa.RecordBatch], bytes] | None = None,
) -> list[tuple[Path, int]]:
    """Rows arriving in ``batches`` as CSV files of at most ``max_rows`` rows each, every one
    starting with ``head`` (one file, header only, when there are no rows), the k-th (from 0)
    written to ``temp_path(k)`` with ``encode`` (``_csv_records`` unless given). Returns each
    file, closed, with its row count; on a failure every file is removed. The caller renames
    them into place: ``--max-rows`` parts and msprof's slices alike."""
    encode = encode or _csv_records
    parts: list[list] = []  # [temporary path, open file, rows]

    def new_part() -> list:
        tmp = temp_path(len(parts))
        f = open(tmp, "wb")
        f.write(head)
        parts.append([tmp, f, 0])
        return parts[-1]

    try:
        part = new_part()
        for batch in batches:
            start = 0
            while start < batch.num_rows:
                if part[2] == max_rows:
                    part[1].close()
                    part = new_part()
                n = min(max_rows - part[2], batch.num_rows - start)
                if batch.num_columns:
                    part[1].write(encode(batch.slice(start, n)))
                part[2] += n
                start += n
    except BaseException:
        for tmp, f, _ in parts:
            f.close()
            tmp.unlink(missing_ok=True)
        raise
    for _, f, _ in parts:
        f.close()
    return [(tmp, n) for tmp, _, n in parts]


def write_csv_parts(
    batches: Iterable[pa.RecordBatch], header: list[str], out: Path, max_rows: int
) -> tuple[int, list[tuple[Path, int]]]:
    """Rows arriving in ``batches`` as CSV files of at most ``max_rows`` rows each, every one
    with the header, named by ``part_path`` (one file, header only, when there are no rows).
    Every file is written under a temporary name beside ``out`` and all are renamed once the
    last is complete: the set appears whole or not at all. Returns the rows written and each
    file with its row count."""
    if max_rows < 1:
        raise UsageError(f"--max-rows {max_rows}; use a positive number of rows")
    out = check_out_file(out)
    token = secrets.token_hex(4)

    def temp_path(k: int) -> Path:
        final = part_path(out, k + 1)
        return final.with_name(f".{final.name}.{token}.tmp")

    written = csv_slices(batches, csv_header(header), max_rows, temp_path)
    try:
        for k, (tmp, _) in enumerate(written):
            os.replace(tmp, part_path(out, k + 1))
    finally:
        for tmp, _ in written:
            tmp.unlink(missing_ok=True)
    return sum(n for _, n in written), [(part_path(out, k + 1), n) for k, (_, n) in enumerate(written)]


def write_bytes(out: str, data: bytes) -> None:
    if out == "-":
        sys.stdout.buffer.write(data) if hasattr(sys.stdout, "buffer") else sys.stdout.write(data.decode())
        sys.stdout.flush()
    else:
        atomic_write(Path(out), lambda p: p.write_bytes(data))


def write_text(out: str, text: str) -> None:
    if out == "-":
        sys.stdout.write(text)
        sys.stdout.flush()
    else:
        atomic_write(Path(out), lambda p: p.write_text(text, encoding="utf-8"))


def check_format(fmt: str, allowed: tuple[str, ...] = ROW_FORMATS) -> str:
    if fmt not in allowed:
        raise UsageError(f"format {fmt!r}; use one of {', '.join(allowed)}")
    return fmt


def write_table(table: pa.Table, fmt: str, out: str, headers: list[str] | None = None) -> int:
    """``table`` as CSV (with ``headers`` when given), JSON lines or Parquet; returns rows written."""
    return write_batches(table.to_batches(), table.schema, fmt, out, headers)


def write_batches(
    batches: Iterable[pa.RecordBatch], schema: pa.Schema, fmt: str, out: str, headers: list[str] | None = None
) -> int:
    """Rows of ``schema`` arriving in ``batches`` as CSV (with ``headers`` when given), JSON
    lines or Parquet, written as they arrive; returns rows written. A file appears whole or
    not at all; standard output gets each batch as it is written."""
    check_format(fmt)
    rows = 0

    def counted() -> Iterator[pa.RecordBatch]:
        nonlocal rows
        for b in batches:
            rows += b.num_rows
            yield b

    if fmt == "parquet":

        def write(target) -> None:
            with pq.ParquetWriter(target, schema, compression="zstd") as w:
                for b in counted():
                    w.write_batch(b)

        if out == "-":
            sink = pa.BufferOutputStream()  # Parquet's footer comes last: the encoded file is kept
            write(sink)
            write_bytes(out, sink.getvalue().to_pybytes())
        else:
            atomic_write(Path(out), write)
        return rows
    chunks = (
        _csv_chunks(counted(), headers or schema.names)
        if fmt == "csv"
        else _jsonl_chunks(counted(), schema.names)
    )
    if out == "-":
        sys.stdout.flush()
        stream = getattr(sys.stdout, "buffer", None)
        for chunk in chunks:
            if stream is not None:
                stream.write(chunk)
            else:  # a text-only stream
                sys.stdout.write(bytes(chunk).decode("utf-8"))
        (stream or sys.stdout).flush()
    else:

        def write_chunks(p: Path) -> None:
            with open(p, "wb") as f:
                for chunk in chunks:
                    f.write(chunk)

        atomic_write(Path(out), write_chunks)
    return rows
