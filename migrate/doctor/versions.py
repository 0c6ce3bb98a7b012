"""Version strings of the Ascend stack, parsed into keys that sort the way the releases do.

CANN has used three spellings, all of which appear in install files and the compatibility
table (``docs/contracts.md`` §8 lists where each is read):

* ``8.0.RC2``, ``8.3.RC1.alpha001``: release candidates before the final ``8.0.0``;
* ``8.0.0``, ``8.5.0``, ``9.1.0``: final releases (``8.5.0.alpha002``, ``9.0.0-beta.1`` are
  pre-releases of them);
* ``8.3.T5.0.B028``: internal build numbers (the kernels package's ``Version=``), which are
  not comparable with release names and parse to None.

torch_npu reads them the same way (``VersionToNum`` / ``VersionV2ToNum`` in
``torch_npu/csrc/core/npu/GetCANNInfo.cpp``): an RC sorts before the final release of its
major.minor, alpha < beta < rc < final. Driver versions (``24.1.rc2``, ``25.0.rc1.1``,
``25.5.0``) and firmware versions (``7.1.0.11.220``) are dotted numbers with an optional
``rcN`` part; ``numeric`` compares their leading numbers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_CANN = re.compile(
    r"^\s*(?:CANN\s+)?(\d+)\.(\d+)\.(?:RC(\d+)|(\d+))"  # major.minor.RCn | major.minor.patch
    r"(?:[.-]?(alpha|beta|rc)[.-]?(\d*))?\s*$",  # optional pre-release
    re.IGNORECASE,
)
_PRE_RANK = {"alpha": 0, "beta": 1, "rc": 2}


@dataclass(frozen=True, order=True)
class CannVersion:
    """A CANN release name as a sortable key; ``text`` keeps the spelling it came from."""

    major: int
    minor: int
    final: int  # 0 for a release candidate (8.0.RC2), 1 for a final release (8.0.0)
    number: int  # the RC number, or the patch number of a final release
    pre: int  # 0 alpha, 1 beta, 2 rc (a pre-release of the name above), 3 none
    pre_number: int
    text: str = ""

    @property
    def release(self) -> tuple[int, int, int, int]:
        """The release without its pre-release part: 8.3.RC1.alpha001 -> 8.3.RC1."""
        return (self.major, self.minor, self.final, self.number)

    @property
    def is_prerelease(self) -> bool:
        return self.pre < 3

    def __str__(self) -> str:
        return self.text or self.name

    @property
    def name(self) -> str:
        head = f"{self.major}.{self.minor}."
        return head + (f"{self.number}" if self.final else f"RC{self.number}")


def parse_cann(text: str | None) -> CannVersion | None:
    """``8.0.RC2`` / ``8.5.0`` / ``9.0.0-beta.1`` / ``CANN 8.3.RC1`` as a key; None when the
    string is not a release name (empty, a build number such as ``8.3.T5.0.B028``)."""
    if not text:
        return None
    m = _CANN.match(text)
    if not m:
        return None
    major, minor, rc, patch, pre, pre_number = m.groups()
    return CannVersion(
        major=int(major),
        minor=int(minor),
        final=0 if rc is not None else 1,
        number=int(rc if rc is not None else patch),
        pre=_PRE_RANK[pre.lower()] if pre else 3,
        pre_number=int(pre_number) if pre_number else 0,
        text=text.strip().removeprefix("CANN ").strip(),
    )


_NUMBERS = re.compile(r"\d+")


def numeric(text: str | None, parts: int = 3) -> tuple[int, ...] | None:
    """The first ``parts`` numbers of a dotted version (``7.1.0.11.220`` -> (7, 1, 0);
    ``24.1.rc2`` -> (24, 1, 2)); None when it has fewer."""
    if not text:
        return None
    found = [int(n) for n in _NUMBERS.findall(text)[:parts]]
    return tuple(found) if len(found) == parts else None


def in_range(value: str, low: str, high: str, parts: int = 3) -> bool | None:
    """Is ``value`` within [low, high], comparing the first ``parts`` numbers? None when any
    side does not parse (no verdict beats a wrong one)."""
    v, lo, hi = numeric(value, parts), numeric(low, parts), numeric(high, parts)
    if v is None or lo is None or hi is None:
        return None
    return lo <= v <= hi
