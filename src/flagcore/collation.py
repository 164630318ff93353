"""Unleash's name order: JavaScript's ``a.localeCompare(b)`` (ICU, root/en-US collation).

Unleash sorts variants by name with ``localeCompare`` before storing them, and the SDKs
give buckets in stored order, so the same variants must come out in the same order here
for the same user to get the same variant. Python's ``sorted`` compares code points
("B" < "a", "ab" < "a_b"); ICU compares in levels: first the letters without case or
accents (space and punctuation, then symbols, digits, letters), then accents, then case
(lower before upper). Printable ASCII and Latin letters with accents follow ICU (checked
against Node's ICU); other characters sort after them by code point, an approximation.
"""

from __future__ import annotations

import unicodedata

__all__ = ["CollationKey", "locale_compare_key"]

CollationKey = tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]

# ICU's root order of printable ASCII (both cases of a letter share a weight), as Node's
# ``localeCompare`` sorts it.
_ASCII_ORDER = " _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$0123456789abcdefghijklmnopqrstuvwxyz"
_PRIMARY = {character: weight for weight, character in enumerate(_ASCII_ORDER, start=1)}
_AFTER_ASCII = len(_ASCII_ORDER) + 1

# ICU's second-level order of the common combining accents (acute before grave, ...).
_ACCENT_ORDER = (
    "\u0301\u0300\u0306\u0302\u030c\u030a\u0308\u030b\u0303\u0307\u0338\u0327\u0328\u0304"
    "\u030d\u030e\u0312\u0315\u031a\u0316\u0317\u0318\u0319\u031c\u031d\u031e\u031f\u0320"
    "\u0329\u032a\u032b\u032c\u032f\u0333\u0336\u0337\u0335\u0305\u0309\u030f\u0310\u0311"
    "\u031b\u0321\u0322\u0323\u0324\u0325\u0326\u032d\u032e\u0330\u0331\u0334\u0339"
)
_SECONDARY = {accent: weight for weight, accent in enumerate(_ACCENT_ORDER, start=1)}

# Letters NFD leaves whole but ICU reads as a base letter with a stroke, or as two letters
# that differ from the plain pair at the third level only.
_STROKED = {"ø": ("o", "\u0338"), "ł": ("l", "\u0337"), "đ": ("d", "\u0335")}
_LIGATURES = {"ß": "ss", "æ": "ae", "œ": "oe"}
_LIGATURE_CASE = 2  # after lower (0) and upper (1): "ss" < "SS" < "ß"


def locale_compare_key(text: str) -> CollationKey:
    """A sort key that orders strings as ``localeCompare`` does."""
    primary: list[int] = []
    secondary: list[int] = []
    tertiary: list[int] = []
    for character in unicodedata.normalize("NFD", text):
        lowered = character.lower()
        stroked = _STROKED.get(lowered)
        if stroked is not None:
            base, accent = stroked
            primary.append(_PRIMARY[base])
            secondary.extend((0, _SECONDARY[accent]))
            tertiary.append(0 if character == lowered else 1)
            continue
        if lowered in _LIGATURES:
            for letter in _LIGATURES[lowered]:
                primary.append(_PRIMARY[letter])
                secondary.append(0)
                tertiary.append(_LIGATURE_CASE + (character != lowered))
            continue
        if unicodedata.combining(character):
            # An accent weighs only at the second level, after its base letter's weight.
            secondary.append(_SECONDARY.get(character, len(_SECONDARY) + ord(character)))
            continue
        weight = _PRIMARY.get(lowered)
        if weight is None:
            if unicodedata.category(character).startswith("C"):
                continue  # control and format characters are ignorable
            weight = _AFTER_ASCII + ord(lowered)
        primary.append(weight)
        secondary.append(0)
        tertiary.append(0 if character == lowered else 1)
    return tuple(primary), tuple(secondary), tuple(tertiary)
