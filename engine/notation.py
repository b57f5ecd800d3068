"""Numbers as dpstudio writes them, in the engine's messages and on the page: a few significant digits, a power of
ten written as the plots' ticks write it (1.18e6, 5.497e-7), not as Python's 1.18e+06."""

from __future__ import annotations


def short(value: float, digits: int = 4) -> str:
    text = f"{value:.{digits}g}"
    mantissa, exponent, power = text.partition("e")
    return f"{mantissa}e{int(power)}" if exponent else text
