"""Numbers and names as the page writes them: a few significant digits, a power of ten written as the plots' ticks
write it (1.18e6, 5.497e-7), not as Python's 1.18e+06; the kernels by the names their buttons show."""

from __future__ import annotations

KERNEL_NAMES = {"cutoff": "cut-off", "gaussian": "Gaussian"}


def counted(n: int, noun: str) -> str:
    """A count and its noun, plural unless one: "1 point", "2,300 points"."""
    return f"{n:,} {noun}{'s' * (n != 1)}"


def short(value: float, digits: int = 4) -> str:
    text = f"{value:.{digits}g}"
    mantissa, exponent, power = text.partition("e")
    return f"{mantissa}e{int(power)}" if exponent else text
