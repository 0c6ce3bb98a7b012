"""Version checks on declared dependencies: one verdict for requirement files, pyproject /
setup.cfg / conda files and setup.py lists alike (kind ``dependency-version``).

A rule row::

    params:
      mode: contains                  # contains | minimum | companion
      versions: {torch: "2.14.0"}     # contains: the specifier must allow this version
      follows: {torch: torch-npu}     # contains: ... or the version of this package when the
                                      #   same file pins it (torch-npu==2.6.0 -> torch 2.6.0)
                                      # minimum: it must allow this version or a later one
                                      # companion: {torch: "torch-npu==2.14.0"}, fires on
                                      #   torch when the same file never names torch-npu

Specifiers are read with ``packaging`` (PEP 440). A requirement without a version, or
one whose specifier does not parse, is never flagged.
"""

from __future__ import annotations

from packaging.requirements import InvalidRequirement
from packaging.requirements import Requirement as Spec
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from migrate.core.kinds import Token, param
from migrate.core.rules import Rule
from migrate.core.schema import mapping, one_of
from migrate.scan.tables.requirements import normalize

KIND = "dependency-version"
MODES = ("contains", "minimum", "companion")
FAR = "9999"  # a version above any real release: does the specifier leave the top open?
PARAMS = {
    "mode": param(
        str,
        required=True,
        check=one_of("contains", "minimum", "companion"),
        doc="contains | minimum | companion",
    ),
    "versions": mapping(param(str), required=True, doc="package -> version (or companion requirement)"),
    "follows": mapping(param(str), doc="package -> the package whose pinned version it must match"),
}


def tokens(rule: Rule, rules) -> set[Token]:
    return {Token(normalize(str(k)).split("-")[0]) for k in rule.params.get("versions") or {}}


def specifier(text: str) -> SpecifierSet | None:
    """The version specifier of a requirement string ("torch>=2.1,<2.3" -> >=2.1,<2.3)."""
    try:
        spec = Spec(text.strip()).specifier
    except (InvalidRequirement, InvalidSpecifier):
        return None
    return spec if str(spec) else None


def wanted(rule: Rule, name: str) -> str | None:
    table = {normalize(str(k)): str(v) for k, v in (rule.params.get("versions") or {}).items()}
    return table.get(name)


def verdict(rule: Rule, name: str, text: str, in_file: dict[str, str]) -> str | None:
    """The version (or companion) the requirement ``text`` of package ``name`` fails to
    allow, or None when it is fine. ``in_file``: every package the same file declares
    (normalized name -> its requirement text)."""
    target = wanted(rule, name)
    if target is None:
        return None
    mode = rule.params.get("mode")
    if mode == "companion":
        companion = normalize(Spec(target).name)
        return None if companion in in_file else target
    leader = {
        normalize(str(k)): normalize(str(v)) for k, v in (rule.params.get("follows") or {}).items()
    }.get(name)
    if leader and leader in in_file:
        target = pinned_release(in_file[leader]) or target
    spec = specifier(text)
    if spec is None:
        return None
    if mode == "contains":
        locals_ = {"", *(f"+{s.version.split('+', 1)[1]}" for s in spec if "+" in s.version)}
        ok = any(spec.contains(target + local, prereleases=True) for local in locals_)
        return None if ok else target
    if mode == "minimum":
        return None if any(spec.contains(v, prereleases=True) for v in _candidates(spec, target)) else target
    return None


def pinned_release(text: str) -> str | None:
    """ "2.6.0" for torch-npu==2.6.0.post3 (the torch release a torch-npu build is for)."""
    spec = specifier(text)
    pins = [s.version for s in spec or () if s.operator in ("==", "===")]
    if len(pins) != 1:
        return None
    try:
        release = Version(pins[0].removesuffix(".*")).release
    except InvalidVersion:
        return None
    return ".".join(map(str, (*release, 0, 0)[:3]))


def _candidates(spec: SpecifierSet, minimum: str) -> list[str]:
    """Versions at or above ``minimum`` that could satisfy ``spec``: the minimum, one far
    above every release, and the versions the specifier names itself (==0.14.0)."""
    floor = Version(minimum)
    named = []
    for s in spec:
        try:
            v = Version(s.version.removesuffix(".*"))
        except InvalidVersion:
            continue
        if v >= floor:
            named.append(str(v))
    return [minimum, FAR, *named]


def minimum_versions(rules) -> dict[str, tuple[str, Rule]]:
    """Package (normalized name) -> (its first release with NPU support, the rule row that
    says so): the ``minimum`` rows of this kind (MIG752). One table for the scan, which
    judges declared pins, and `migrate doctor`, which judges installed versions."""
    out: dict[str, tuple[str, Rule]] = {}
    for rule in rules:
        if rule.kind != KIND or rule.params.get("mode") != "minimum":
            continue
        for name, version in (rule.params.get("versions") or {}).items():
            out[normalize(str(name))] = (str(version), rule)
    return out
