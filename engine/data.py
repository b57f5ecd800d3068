"""Reading, validating and writing data: every problem with the input becomes one readable DataError."""

from __future__ import annotations

import contextlib
import csv
import gzip
import io
import itertools
import os
import re
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from .notation import short

TABLE_SUFFIXES = {".csv": ",", ".tsv": "\t", ".tab": "\t", ".txt": None}
GZIPPED = ".gz"  # a gzipped table: notes.csv.gz
READABLE = (*TABLE_SUFFIXES, ".parquet", ".pq", ".npy", *(suffix + GZIPPED for suffix in TABLE_SUFFIXES))


class DataError(ValueError):
    """The input cannot be clustered; the message says why in one line."""


@dataclass(frozen=True)
class Points:
    """Validated points ready for the engine."""

    values: np.ndarray  # (N, d) float32, C-contiguous
    columns: tuple[str, ...]
    rows: np.ndarray  # original row number of each point (rows with NaN/inf may have been dropped)
    dropped_rows: np.ndarray  # original row numbers removed for NaN/inf (empty unless asked to drop)
    notes: tuple[str, ...] = ()  # warnings on the features (``feature_notes``), for the CLI and the page to say


def read_table(path: str | Path) -> pd.DataFrame:
    """Read CSV/TSV/TXT (header detected; gzipped too, as .csv.gz), Parquet or NPY into a DataFrame with string
    column names."""
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{path} is a folder, not a file")
    if not path.is_file():
        raise DataError(f"file not found: {path}")
    return _parse(path.name, path)


def read_upload(name: str, content: bytes, max_values: int | None = None) -> pd.DataFrame:
    """Like ``read_table``, for a file's content sent by a browser: parsed in memory, never written to disk.
    ``max_values`` bounds a compressed file's rows x columns before it is expanded (Parquet's, from its footer), or
    a gzipped table's text to 2 bytes a value (the least a value and its separator take), as it is expanded."""
    return _parse(Path(name).name, io.BytesIO(content), max_values)


def file_type(name: str) -> str:
    """The type of file ``name`` is read as, by its suffix (".csv", or ".csv.gz" for a gzipped one), or a
    DataError that lists the readable ones."""
    suffixes = [suffix.lower() for suffix in Path(name).suffixes]
    suffix = "".join(suffixes[-2:]) if suffixes[-1:] == [GZIPPED] else "".join(suffixes[-1:])
    if suffix not in READABLE:
        raise DataError(f"unsupported file type '{suffix or name}' (expected one of {', '.join(READABLE)})")
    return suffix


def _parse(name: str, source: Path | io.BytesIO, max_values: int | None = None) -> pd.DataFrame:
    suffix = file_type(name)
    try:
        if suffix.endswith(GZIPPED):  # expanded in memory, as far as the bound allows, then read as its table
            source, suffix = _gunzipped(name, source, None if max_values is None else 2 * max_values), suffix.removesuffix(GZIPPED)
        if suffix == ".npy":
            frame = _read_npy(name, source)
        elif suffix in (".parquet", ".pq"):
            frame = _read_parquet(name, source, max_values)
        else:
            frame = _read_delimited(name, source, TABLE_SUFFIXES[suffix])
    except DataError:
        raise
    except Exception as exc:  # a parser's own message, kept to one line and to the file's name (no server path)
        reason = str(exc).splitlines()[0].replace(str(source), name) if str(exc) else type(exc).__name__
        raise DataError(f"cannot read {name}: {reason}") from exc
    if len(frame) == 0:
        raise DataError(f"{name} has no rows")
    frame.columns = [str(c) for c in frame.columns]
    return frame


def _opened(source: Path | io.BytesIO):
    """A binary handle on the file or the in-memory content, at its start (the content stays open)."""
    if isinstance(source, Path):
        return source.open("rb")
    source.seek(0)
    return contextlib.nullcontext(source)


def _gunzipped(name: str, source: Path | io.BytesIO, max_bytes: int | None) -> io.BytesIO:
    """A gzipped file's content, expanded chunk by chunk up to ``max_bytes``: a few KB of gzip may expand to GBs."""
    expanded, size = io.BytesIO(), 0
    with _opened(source) as handle, gzip.GzipFile(fileobj=handle) as unzipped:
        try:
            while chunk := unzipped.read(2**20):
                size += len(chunk)
                if max_bytes is not None and size > max_bytes:
                    raise DataError(f"{name} expands past the upload limit of {max_bytes / 2**20:.0f} MB")
                expanded.write(chunk)
        except gzip.BadGzipFile as exc:
            raise DataError(f"{name} is not a gzip file (corrupt, or another format renamed)") from exc
        except (EOFError, zlib.error) as exc:
            raise DataError(f"{name} is truncated or corrupt: its gzip data end early or do not decompress") from exc
    return expanded


def _read_parquet(name: str, source: Path | io.BytesIO, max_values: int | None) -> pd.DataFrame:
    """A Parquet file, its size checked from its footer first: a few KB may expand to millions of rows."""
    import pyarrow.parquet as pq

    with _opened(source) as handle:
        parquet = pq.ParquetFile(handle)
        rows, columns = parquet.metadata.num_rows, parquet.metadata.num_columns
        if max_values is not None and rows * columns > max_values:
            raise DataError(f"{name} expands to {rows:,} rows x {columns} columns; the limit is {max_values:,} values")
        return parquet.read().to_pandas()


def _read_npy(name: str, source: Path | io.BytesIO) -> pd.DataFrame:
    with _opened(source) as handle:
        # np.load takes anything without the .npy magic for a pickle, so check it here
        if handle.read(len(np.lib.format.MAGIC_PREFIX)) != np.lib.format.MAGIC_PREFIX:
            raise DataError(f"{name} is not a NumPy .npy file (corrupt, or another format renamed)")
        handle.seek(0)
        try:
            version = np.lib.format.read_magic(handle)
            read_header = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
            _, _, dtype = read_header(handle)
        except ValueError as exc:
            raise DataError(f"{name} has a corrupt .npy header") from exc
        if dtype.hasobject:
            raise DataError(f"{name} holds Python objects; only numeric .npy files are read")
        handle.seek(0)
        try:
            array = np.load(handle, allow_pickle=False)
        except (ValueError, OSError, EOFError) as exc:
            raise DataError(f"{name} is truncated or corrupt: its data do not match its .npy header") from exc
    if array.ndim == 1:
        array = array[:, None]
    if array.ndim != 2:
        raise DataError(f"{name} has shape {array.shape}; expected (N, d)")
    if not np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.complexfloating):
        raise DataError(f"{name} has dtype {array.dtype}; expected real numbers")
    return pd.DataFrame(array, columns=[str(c) for c in range(array.shape[1])])


# one number written with a decimal comma: "-0,126", "1,", ",5"; a digit beside the comma (a lone "," is no number)
DECIMAL_COMMA = r"^(?=\s*[-+]?,?\d)(\s*[-+]?\d*),(\d*(?:[eE][-+]?\d+)?\s*)$"


def _read_delimited(name: str, source: Path | io.BytesIO, sep: str | None) -> pd.DataFrame:
    with _opened(source) as handle:
        lines = [line.decode("utf-8", errors="replace") for line in itertools.islice((ln for ln in handle if ln.strip()), 2)]
    if not lines:
        raise DataError(f"{name} has no rows")
    first = lines[0] = lines[0].removeprefix("\ufeff")  # a byte order mark is no part of a header or a number
    if sep is None:  # .txt: whichever of tab, comma, semicolon the first line uses, else whitespace
        sep = next((s for s in ("\t", ",", ";") if s in first), r"\s+")
    elif sep == "," and "," not in first and ";" in first:  # a spreadsheet's export where the decimal mark is a comma
        sep = ";"
    fields = _fields(first, sep)
    if len(lines) > 1 and len(_fields(lines[1], sep)) > len(fields):  # pandas would take the first field for an index
        raise DataError(f"{name}: rows have more fields than the first line's {len(fields)}; is '{sep}' the separator?")
    # a semicolon file is a spreadsheet's export, whose numbers may have decimal commas ("-0,126;4,567"): read so,
    # and a column of decimal points (no number with a comma mark) is text then, which _numeric_column reads
    decimal = "," if sep == ";" else "."
    has_header = not all(_is_number(f.strip().replace(decimal, ".")) for f in fields)
    options = {"sep": sep, "decimal": decimal, "header": 0 if has_header else None, "skip_blank_lines": True, "index_col": False}
    try:
        frame = _read_csv(name, source, options, "utf-8-sig")
    except UnicodeDecodeError:  # not UTF-8: most often a spreadsheet's Latin-1 export, where any byte is valid
        frame = _read_csv(name, source, options, "latin-1")
    if decimal == ",":  # a column the parser left as text (one stray word): its decimal commas read as numbers, so
        # that the word is what an error names (it named the first "1,5")
        for column in frame.columns:
            if pd.api.types.is_string_dtype(frame[column]):
                frame[column] = frame[column].str.replace(DECIMAL_COMMA, r"\1.\2", regex=True)
    return frame


def _read_csv(name: str, source: Path | io.BytesIO, options: dict, encoding: str) -> pd.DataFrame:
    with _opened(source) as handle:
        try:
            return pd.read_csv(handle, encoding=encoding, **options)
        except pd.errors.ParserError as exc:  # "Error tokenizing data. C error: Expected 2 fields in line 3, saw 3"
            ragged = re.search(r"Expected (\d+) fields in line (\d+), saw (\d+)", str(exc))
            if ragged is None:
                raise DataError(f"{name} cannot be read as a table: {exc}") from exc
            expected, line, saw = ragged.groups()
            raise DataError(f"{name}: line {line} has {saw} fields where the lines before it have {expected}") from exc


def _fields(line: str, sep: str) -> list[str]:
    """A line's fields as the CSV parser splits them (quotes respected)."""
    return line.split() if sep == r"\s+" else next(csv.reader([line.rstrip("\r\n")], delimiter=sep))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _numeric_column(frame: pd.DataFrame, name: str, named_by_user: bool) -> np.ndarray | None:
    """The column as float64, None if it is text to be skipped; a mostly numeric column with stray text is an error."""
    column = frame[name]
    if pd.api.types.is_complex_dtype(column):
        raise DataError(f"column '{name}' holds complex numbers; expected real numbers")
    if pd.api.types.is_bool_dtype(column):
        return column.to_numpy(np.float64)
    if pd.api.types.is_numeric_dtype(column):
        return column.to_numpy(np.float64, na_value=np.nan)
    parsed = pd.to_numeric(column, errors="coerce")
    bad = parsed.isna() & column.notna() & (column.astype(str).str.strip() != "")
    if bad.all() and not named_by_user:
        return None
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise DataError(f"column '{name}' is not numeric: value {column.iloc[row]!r} at row {row} (0-based)")
    return parsed.to_numpy(np.float64, na_value=np.nan)


def to_points(
    data,
    columns: list[str] | None = None,
    *,
    standardize: bool = False,
    drop_nonfinite: bool = False,
) -> Points:
    """Validate a path, DataFrame or array into float32 points (N >= 2, d >= 1, all finite), with warnings on their
    features in ``notes`` (``feature_notes``: constant ones, and those float32 rounds past a hundredth of their
    spread)."""
    table = isinstance(data, (str, Path, pd.DataFrame))
    if isinstance(data, (str, Path)):
        frame = read_table(data)
    elif isinstance(data, pd.DataFrame):
        frame = data.rename(columns=str)
    else:
        array = np.asarray(data)
        if array.ndim == 1:
            array = array[:, None]
        if array.ndim != 2:
            raise DataError(f"expected a 2-D array (N, d), got shape {array.shape}")
        if not (np.issubdtype(array.dtype, np.number) or array.dtype == bool) or np.iscomplexobj(array):
            raise DataError(f"expected real numbers, got dtype {array.dtype}")
        frame = pd.DataFrame(array, columns=[str(c) for c in range(array.shape[1])])

    if columns:
        missing = [c for c in columns if c not in frame.columns]
        if missing:
            raise DataError(f"no column named {missing[0]!r} (available: {', '.join(frame.columns)})")
        chosen = {c: _numeric_column(frame, c, True) for c in columns}
    else:
        chosen = {c: v for c in frame.columns if (v := _numeric_column(frame, c, False)) is not None}
        if table:  # a column with no value at all (a spreadsheet's blank one) is no feature, as text is none
            chosen = {c: v for c, v in chosen.items() if np.isfinite(v).any()}
        if not chosen:
            raise DataError(f"no numeric columns (columns: {', '.join(frame.columns)})")
    values = np.column_stack(list(chosen.values())) if chosen else np.empty((len(frame), 0))

    finite = np.isfinite(values).all(axis=1)
    dropped = np.flatnonzero(~finite)
    if dropped.size and not drop_nonfinite:
        raise DataError(
            f"{dropped.size} row(s) contain NaN or infinite values (first at row {dropped[0]}, 0-based); "
            "drop them with drop_nonfinite=True / --drop-nonfinite"
        )
    values = values[finite]
    if values.shape[0] < 2:
        raise DataError(f"need at least 2 points, got {values.shape[0]}")
    read = values
    if standardize:
        spread = values.std(axis=0)
        values = (values - values.mean(axis=0)) / np.where(spread > 0, spread, 1.0)
    check_scale(values, "rescale the data, or standardize it (--standardize; in the app, tick Standardize and load it again)")
    points = np.ascontiguousarray(values, dtype=np.float32)
    names = tuple(chosen)
    return Points(points, names, np.flatnonzero(finite), dropped, feature_notes(points, names, read, standardized=standardize))


def constant_features_notice(values: np.ndarray, columns) -> str:
    """A warning naming the features that hold one value on every row of ``values`` (N, d): they take no part in any
    distance (where none varies, every point is the same). Else an empty string."""
    same = [name for name, low, high in zip(columns, values.min(axis=0), values.max(axis=0)) if low == high]
    if not same:
        return ""
    if len(same) == len(columns):
        return "no feature varies: every point is the same"
    named = ", ".join(f"'{name}'" for name in same)
    if len(same) == 1:
        return f"feature {named} holds one value on every row: it takes no part in the distances"
    return f"features {named} hold one value on every row: they take no part in the distances"


IDENTIFIER_MIN_ROWS = 20  # fewer rows are too few to tell an id from a feature (doses 1, 2, 3)


def identifier_features_notice(values: np.ndarray, columns) -> str:
    """A warning naming the features (of two or more) that hold a different whole number on every row, filling at
    least half of their range, in any order, as an id or a row number does (rows dropped or filtered out leave
    gaps): such a column spreads the points along itself and can outweigh every real feature in the distances (3
    blobs beside ids 100000-102999 gave one cluster). Else ''."""
    n = values.shape[0]
    if values.shape[1] < 2 or n < IDENTIFIER_MIN_ROWS:
        return ""
    named = []
    for j, name in enumerate(columns):  # column by column; the cheap range test first (no sort for most columns)
        column = values[:, j]
        span = float(column.max() - column.min())
        if n - 1 <= span < 2 * n and np.array_equal(column, np.round(column)) and np.unique(column).size == n:
            named.append(f"'{name}'")
    if not named:
        return ""
    if len(named) == 1:
        return (f"feature {named[0]} holds a different whole number on every row, as an id or a row number does: if "
                "it is one, leave it out of the features (it may outweigh them all in the distances)")
    return (f"features {', '.join(named)} hold a different whole number on every row, as ids or row numbers do: if "
            "they are, leave them out of the features (they may outweigh the rest in the distances)")


def new_points(data, n_dims: int) -> np.ndarray:
    """Points to add to an index over ``n_dims`` features: a real, finite (m, n_dims) array (m = 0: none; one point
    may be a 1-D array of n_dims values), as float32."""
    array = np.asarray(data)
    if array.ndim == 1 and array.shape[0] == n_dims:
        array = array[None, :]
    if array.ndim != 2 or array.shape[1] != n_dims:
        raise DataError(f"expected points of {n_dims} features, shape (m, {n_dims}); got shape {array.shape}")
    if not (np.issubdtype(array.dtype, np.number) or array.dtype == bool) or np.iscomplexobj(array):
        raise DataError(f"expected real numbers, got dtype {array.dtype}")
    if not np.isfinite(array).all():
        raise DataError("new points contain NaN or infinite values")
    if array.size:
        check_scale(array, "they are far outside the data's scale", whole_data=False)
    return np.ascontiguousarray(array, dtype=np.float32)


# Squared distances are float32 (the semantics' rule). Their terms (2 M)^2 summed over d features stay below
# float32's largest value (2^128) when M <= 2^62 / sqrt(d). And when every value is below 2^-40, the squared step
# between neighbouring float32 values falls below float32's smallest normal number (2^-126): distances vanish.
SMALLEST_SCALE = 2.0**-40


def largest_value(n_dims: int) -> float:
    """The largest |value| whose squared distances cannot overflow float32 in ``n_dims`` features."""
    return 2.0**62 / np.sqrt(max(n_dims, 1))


MAX_ROUNDING = 1e-2  # of a feature's standard deviation: float32's rounding of its values beyond it is warned of


def check_scale(values: np.ndarray, advice: str, whole_data: bool = True) -> None:
    """Refuse values whose float32 squared distances would overflow to inf, or (for a whole data set) all
    underflow to 0, instead of clustering them wrongly without a word."""
    largest = float(np.abs(values).max())
    if largest > largest_value(values.shape[1]):
        raise DataError(f"values up to {short(largest, 3)} are too large: their squared distances overflow float32 (at "
                        f"{values.shape[1]} features the limit is {short(largest_value(values.shape[1]), 3)}); {advice}")  # fmt: skip
    if whole_data and 0 < largest < SMALLEST_SCALE:
        raise DataError(f"every value is below {short(SMALLEST_SCALE, 3)} (the largest is {short(largest, 3)}): their squared "
                        f"distances underflow float32 to 0; {advice}")  # fmt: skip


def feature_notes(points: np.ndarray, columns, read: np.ndarray | None = None, standardized: bool = False) -> tuple[str, ...]:
    """Warnings on the features of ``points`` (N, d) float32: those that hold one value on every row, and, given the
    values ``read`` (before float32, and before a z-score where ``standardized``), those that look like an id or a
    row number (``identifier_features_notice``) and, unless standardized, those that float32 rounds by more than
    ``MAX_ROUNDING`` of their spread (values far from 0 that vary little: coordinates near 1e7 that vary by a few
    units became a grid of whole numbers, 2 clusters for 3, without a word)."""
    notes = [constant_features_notice(points if read is None else read, columns)]  # (as read: not one float32 makes)
    if read is not None:
        notes.append(identifier_features_notice(read, columns))
    for j in range(points.shape[1] if read is not None and not standardized else 0):  # column by column: no copy
        column = read[:, j]
        spread, rounding = column.std(), float(np.abs(column - points[:, j]).max())
        if rounding > MAX_ROUNDING * spread and column.max() > column.min():  # (a constant one is noted above)
            rounded = "to one value" if points[:, j].min() == points[:, j].max() else f"by up to {short(rounding, 3)}"
            notes.append(f"feature '{columns[j]}' varies by {short(spread, 3)} (its standard deviation) around values of "
                         f"{short(np.abs(column).max(), 3)}, and float32, in which distances are computed, rounds it {rounded}: "
                         "subtract an offset (such as its mean), or standardize, for exact distances")  # fmt: skip
    return tuple(note for note in notes if note)


def with_dropped_rows(table: pd.DataFrame, dropped_rows: np.ndarray) -> pd.DataFrame:
    """A per-point result table (``index`` = input row) with the rows left out for NaN/inf put back in place,
    empty but for their index and a ``reason``, so the table has one row per input row."""
    if not len(dropped_rows):
        return table
    dropped = pd.DataFrame({"index": dropped_rows, "reason": "NaN or infinite value"})
    full = pd.concat([table.assign(reason=""), dropped], ignore_index=True).sort_values("index", ignore_index=True)
    # whole numbers and flags stay so, with an empty cell in the dropped rows (whatever the method's columns)
    nullable = {name: "Int64" if dtype.kind == "i" else "boolean" for name, dtype in table.dtypes.items() if dtype.kind in "ib"}
    return full.astype(nullable)


def check_output_path(path: str | Path) -> Path:
    """The path ``write_labels`` can write to, checked before any work (a .csv or .parquet file name, in a folder
    that exists); else a ``DataError`` that says what is wrong."""
    path = Path(path)
    if path.is_dir():
        raise DataError(f"{path} is a folder; give a file name")
    if path.suffix.lower() not in (".csv", ".parquet", ".pq"):
        raise DataError(f"cannot write '{path.suffix or path.name}': use a .csv or .parquet file name")
    if not path.parent.exists():
        raise DataError(f"folder not found: {path.parent}")
    if not os.access(path.parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise DataError(f"cannot write {path}: permission denied")
    return path


def write_labels(path: str | Path, table: pd.DataFrame) -> None:
    """Write a per-point result table as CSV or Parquet, chosen by the file's suffix."""
    path = check_output_path(path)
    suffix = path.suffix.lower()
    try:
        if suffix == ".csv":
            table.to_csv(path, index=False)
        else:
            table.to_parquet(path, index=False)
    except OSError as exc:
        raise DataError(f"cannot write {path}: {exc.strerror or exc}") from exc
