"""Counts, columns and names as the page writes them (its numbers: ``dpstudio.engine.notation.short``); the kernels by
the names their buttons show."""

from __future__ import annotations

import math
import re

import numpy as np

KERNEL_NAMES = {"cutoff": "cut-off", "gaussian": "Gaussian"}


def counted(n: int, noun: str) -> str:
    """A count and its noun, plural unless one: "1 point", "2,300 points"."""
    return f"{n:,} {noun}{'' if n == 1 else 's'}"  # (not 's' * (n != 1): a NumPy count's comparison is no int)


def column_decimals(values, digits: int = 4, smallest_digits: int = 2, most: int = 6) -> int | None:
    """The decimals that show a column's largest value to ``digits`` significant figures and its smallest non-zero
    one to ``smallest_digits`` (a center's δ of 0.004 under one of 14.7 read 0.00), one count for every row so that
    they line up (0 for whole numbers); None where that would take more than ``most``, or show the largest to more
    than 2 figures past its ``digits`` (values of many scales, which are better written in powers of ten)."""
    values = np.abs(np.asarray(values, np.float64))
    values = values[np.isfinite(values) & (values > 0)]
    if not values.size or (values == np.round(values)).all():
        return 0
    needed = lambda value, figures: figures - 1 - math.floor(math.log10(value))  # noqa: E731
    for_largest, for_smallest = needed(float(values.max()), digits), needed(float(values.min()), smallest_digits)
    decimals = max(0, for_largest, for_smallest)
    # (nor where the smallest would make the largest show more than 2 figures past its 4: float32 has no more)
    return decimals if decimals <= most and for_smallest <= max(for_largest, 0) + 2 else None


# a name in a comma-separated list, as a CSV field: in double quotes (a quote inside doubled) where it holds a comma, or
# spaces at either end, else as it is (a quote inside taken as it is), the spaces around it left out
_LISTED_NAME = re.compile(r'\s*(?:"((?:[^"]|"")*)"\s*|([^,]*))(?:,|$)')


def name_list(names) -> str:
    """Column names as one comma-separated argument (``--columns``), which ``read_name_list`` reads back."""
    quoted = lambda name: '"' + name.replace('"', '""') + '"' if re.search(r'^[\s"]|,|\s$', name) else name  # noqa: E731
    return ",".join(quoted(name) for name in names)


def read_name_list(text: str) -> list[str]:
    """The names of a comma-separated list as ``name_list`` writes it ("a, b" is a and b; 'size"inch' as it is); an
    unclosed quote is refused."""
    names = []
    for quoted, plain in _LISTED_NAME.findall(text):
        if plain.lstrip().startswith('"'):
            raise ValueError(f"a name opens a quote it does not close: {plain.strip()}")
        names.append(quoted.replace('""', '"') if quoted else plain.strip())
    return [name for name in names if name]
