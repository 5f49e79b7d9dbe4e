"""Kubernetes resource quantities: parse, exact arithmetic, and apimachinery's canonical strings.

A value is held as an exact integer count of nano-units. Parsing rounds away from zero to the
nearest nano, as apimachinery does ("if you want some resources, you should get some"), and a
quantity remembers the suffix family it was written in so that it prints back in that family.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from enum import StrEnum
from fractions import Fraction
from typing import Any


class Format(StrEnum):
    DECIMAL_SI = "DecimalSI"
    BINARY_SI = "BinarySI"
    DECIMAL_EXPONENT = "DecimalExponent"


NANO = 10**9
# Far beyond any real resource, but keeps a hostile "1e999999999" from building a giant integer.
MAX_EXPONENT = 1000

_BINARY_SUFFIXES = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIXES = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DECIMAL_BY_EXPONENT = {exp: suffix for suffix, exp in _DECIMAL_SUFFIXES.items()}
_BINARY_BY_POWER = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]

MAX_INT64 = 2**63 - 1

# Sign, digits, optional fraction, then suffix letters with an optional signed exponent.
_SHAPE = re.compile(r"([+-]?)([0-9]*)(?:\.([0-9]*))?([eEinumkKMGTP]*[+-]?[0-9]*)")
_EXPONENT = re.compile(r"[eE]([+-]?[0-9]+)")


@dataclass(frozen=True, slots=True)
class Quantity:
    """An exact resource amount. Equality, ordering and hashing look at the value only."""

    nanos: int
    format: Format = field(default=Format.DECIMAL_SI, compare=False)
    # The parsed spelling when apimachinery would print it back unchanged; arithmetic drops it.
    text: str | None = field(default=None, compare=False, repr=False)

    @classmethod
    def parse(cls, text: str | int | float) -> Quantity:
        return parse_quantity(text)

    def is_zero(self) -> bool:
        return self.nanos == 0

    def __add__(self, other: Quantity) -> Quantity:
        # apimachinery: a zero receiver takes the other operand's format.
        fmt = other.format if self.nanos == 0 else self.format
        return Quantity(self.nanos + other.nanos, fmt)

    def __sub__(self, other: Quantity) -> Quantity:
        fmt = other.format if self.nanos == 0 else self.format
        return Quantity(self.nanos - other.nanos, fmt)

    def __neg__(self) -> Quantity:
        return Quantity(-self.nanos, self.format)

    def __mul__(self, factor: int) -> Quantity:
        return Quantity(self.nanos * factor, self.format)

    __rmul__ = __mul__

    def __lt__(self, other: Quantity) -> bool:
        return self.nanos < other.nanos

    def __le__(self, other: Quantity) -> bool:
        return self.nanos <= other.nanos

    def __gt__(self, other: Quantity) -> bool:
        return self.nanos > other.nanos

    def __ge__(self, other: Quantity) -> bool:
        return self.nanos >= other.nanos

    def __str__(self) -> str:
        return format_quantity(self)


def parse_quantity(text: str | int | float | Any) -> Quantity:
    """Parse "500m", "4Gi", "1.5", "12e-3"...; raises ValueError where apimachinery fails.

    Like apimachinery, an empty number is zero ("-", ".", "Gi"), BinarySI magnitudes are capped at
    2^63-1, and a short input already in canonical shape keeps its spelling ("+1", "1E3", "007").
    """
    if isinstance(text, bool) or not isinstance(text, str | int | float):
        raise ValueError(f"quantity must be a string or a number, not {type(text).__name__}")
    raw = str(text)
    match = _SHAPE.fullmatch(raw)
    if not raw or match is None:
        raise ValueError(f"quantities must match the regular expression: {raw!r}")
    sign, whole, frac, suffix = match.group(1), match.group(2), match.group(3) or "", match.group(4)
    whole = whole.lstrip("0") or "0"
    fmt, base, exponent = _interpret_suffix(suffix, raw)
    magnitude = Fraction(int(whole + frac), 10 ** len(frac))
    if base == 2:
        magnitude *= 2**exponent
    elif exponent >= 0:
        magnitude *= 10**exponent
    else:
        magnitude /= 10**-exponent
    nanos = math.ceil(magnitude * NANO)
    if fmt is Format.BINARY_SI:
        nanos = min(nanos, MAX_INT64 * NANO)
    kept = raw if _keeps_spelling(whole, frac, fmt, exponent) else None
    return Quantity(-nanos if sign == "-" else nanos, fmt, kept)


def _keeps_spelling(whole: str, frac: str, fmt: Format, exponent: int) -> bool:
    """apimachinery's fast path, which remembers the input when it already looks canonical."""
    if fmt is Format.BINARY_SI:
        if frac or exponent * 3 // 10 + len(whole) + 1 > 15:
            return False
        value = int(whole)
        return value << exponent <= MAX_INT64 and value & 7 != 0
    digits = whole + frac
    scale = exponent - len(frac)
    return (
        len(digits) <= 18
        and scale >= -9
        and scale % 3 == 0
        and not digits.endswith("000")
        and digits[0] != "0"
    )


def _interpret_suffix(suffix: str, raw: str) -> tuple[Format, int, int]:
    if suffix in _DECIMAL_SUFFIXES:
        return Format.DECIMAL_SI, 10, _DECIMAL_SUFFIXES[suffix]
    if suffix in _BINARY_SUFFIXES:
        return Format.BINARY_SI, 2, _BINARY_SUFFIXES[suffix]
    exp = _EXPONENT.fullmatch(suffix)
    if exp is not None:
        value = int(exp.group(1))
        if abs(value) > MAX_EXPONENT:
            raise ValueError(f"quantity exponent out of range: {raw!r}")
        return Format.DECIMAL_EXPONENT, 10, value
    raise ValueError(f"unable to parse quantity's suffix: {raw!r}")


def format_quantity(q: Quantity) -> str:
    """The canonical string: no precision lost, no fraction digits, the largest exponent possible.

    BinarySI falls back to DecimalSI for magnitudes under 1024 and for non-integers, as
    apimachinery does, so 1.5Gi prints as 1536Mi and 0.5Gi as 512Mi but 1.5 as 1500m.
    """
    if q.text is not None:
        return q.text
    if q.nanos == 0:
        return "0"
    fmt = q.format
    if fmt is Format.BINARY_SI and (abs(q.nanos) < 1024 * NANO or q.nanos % NANO):
        fmt = Format.DECIMAL_SI
    if fmt is Format.BINARY_SI:
        return _format_binary(q.nanos // NANO)
    return _format_decimal(q.nanos, fmt)


def _format_binary(value: int) -> str:
    sign, magnitude = ("-" if value < 0 else ""), abs(value)
    power = 0
    while magnitude >= 1024 and magnitude % 1024 == 0 and power < len(_BINARY_BY_POWER) - 1:
        magnitude //= 1024
        power += 1
    return f"{sign}{magnitude}{_BINARY_BY_POWER[power]}"


def _format_decimal(nanos: int, fmt: Format) -> str:
    mantissa, exponent = nanos, -9
    while mantissa % 10 == 0:
        mantissa //= 10
        exponent += 1
    # Lower the exponent to a multiple of three (towards minus infinity), growing the mantissa.
    shift = exponent % 3
    mantissa *= 10**shift
    exponent -= shift
    if fmt is Format.DECIMAL_EXPONENT:
        return f"{mantissa}e{exponent}" if exponent else str(mantissa)
    if exponent > 18:
        # Past Exa there is no SI suffix; stay parseable by widening the mantissa instead.
        mantissa *= 10 ** (exponent - 18)
        exponent = 18
    return f"{mantissa}{_DECIMAL_BY_EXPONENT[exponent]}"


def parse_resource_list(resources: Any) -> dict[str, Quantity]:
    """A ResourceList (name -> quantity) as quantities; a missing list is empty.

    Strings are trimmed first, as Quantity's JSON decoding does.
    """
    if not resources:
        return {}
    return {
        str(name): parse_quantity(value.strip() if isinstance(value, str) else value)
        for name, value in dict(resources).items()
    }
