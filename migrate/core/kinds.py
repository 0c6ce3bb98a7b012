"""Rule kinds: the one table of matcher families, for every engine.

A rule row names its ``kind``; the kind says which engine runs it (``python``: parsed Python
sources and notebook cells; ``text``: scripts, images, CI and requirement files; ``onnx``:
model graphs), which ``params`` a row may carry (a typed schema: an unknown key or a value of
the wrong type fails the load, naming the file, the rule and the key), and which prefilter
tokens a row gives (a kind without a tokens function fails at import; a Python rule whose
tokens come out empty fails at load, since it would switch the prefilter off).

One kind name may have a matcher in several engines (``env-var`` and ``dependency`` run in
Python and in text files): they share one params schema, declared once next to the shared
lookup table (``migrate.scan.tables``).

Matchers register with ``@rule_kind(name, engine=..., params=..., tokens=...)`` in a module
of ``migrate.scan.python.kinds``, ``migrate.scan.text.kinds`` or ``migrate.scan.onnx``;
the registry finds them by walking those packages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from migrate.core.errors import RuleError
from migrate.core.filekinds import FILE_KINDS, engine_of
from migrate.core.registry import Registry
from migrate.core.schema import Param, Schema, param, problems, strings
from migrate.core.targets import TARGETS

__all__ = [
    "KINDS",
    "Param",
    "RuleKind",
    "Schema",
    "Token",
    "check_rule",
    "kind",
    "kinds_of",
    "param",
    "prefilter_words",
    "rule_kind",
    "strings",
]

ENGINES = ("python", "text", "onnx")
READS = (None, "code", "strings")


@dataclass(frozen=True)
class Token:
    """A prefilter token: a literal every matching file holds (found with memmem), plus, where
    it helps, a regex (text syntax) that confirms it. The text engine compares literals
    case-insensitively and ignores the regex. ``line``: every match of the regex lies within
    one line and holds the literal, so only the lines holding the literal are searched.
    ``context``: where in a Python file the literal must sit to matter (the kind's ``reads``):
    "code" (outside every string literal but an f-string), "strings" (inside one), or None
    (anywhere but comments and docstrings)."""

    literal: str
    pattern: str | None = None
    line: bool = False
    context: str | None = None


# Keys every kind accepts: explicit prefilter words. (The effort estimate is the row's own
# ``effort:`` field, migrate/core/effort_spec.py, not a param.)
COMMON_PARAMS: dict[str, Param] = {
    "prefilter": strings(doc="words of which a file must hold one for the rule to match"),
}


def prefilter_words(rule: Any, rules: Sequence[Any] = ()) -> set[Token]:
    """The tokens a row lists itself in ``params.prefilter`` (the tokens function of kinds
    that match literals)."""
    return {Token(str(w)) for w in rule.params.get("prefilter") or ()}


@dataclass(frozen=True)
class RuleKind:
    name: str
    engine: str
    run: Callable[..., Any]
    params: Schema
    # tokens(rule, rules) -> the prefilter Tokens a row gives (text engine: an empty set means
    # "always run"); ``rules`` is the whole selection (some kinds pick tokens by what rules share).
    tokens: Callable[..., Iterable[Any]]
    paths: tuple[str, ...] | None = None  # file-name globs the kind is limited to
    # compile(rules) -> what ``run`` receives instead of the rules: a table built once per
    # run from the kind's selected rows (migrate/scan/ruleset.py); None: the rules themselves
    compile: Callable[[tuple[Any, ...]], Any] | None = None
    # the keys a row's ``portable:`` forms may have (None: the kind has no portable forms)
    portable: Schema | None = None
    # refs(rule) -> the first cross-reference of the row that does not resolve (a fixer
    # nobody registered, a note for a name the row does not list), or None
    refs: Callable[[Any], str | None] | None = None
    # what the matcher reads, so the prefilter knows where a token matters: "code" (names,
    # attributes and imports: a token inside a string literal cannot make a finding),
    # "strings" (string literals only), None (either)
    reads: str | None = None
    # the port targets under which the matcher can report (None: every target)
    targets: tuple[str, ...] | None = None
    schema: dict[str, Param] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "schema", {**COMMON_PARAMS, **self.params})


def _check(key: str, kind: RuleKind, meta: dict) -> None:
    if kind.engine not in ENGINES:
        raise ValueError(f"engine {kind.engine!r} is not one of {', '.join(ENGINES)}")
    if not callable(kind.tokens):
        raise ValueError("declares no prefilter tokens function")
    if kind.reads not in READS:
        raise ValueError(f"reads {kind.reads!r}: choose one of {', '.join(map(str, READS))}")
    unknown = sorted(set(kind.targets or ()) - set(TARGETS))
    if unknown or kind.targets == ():
        raise ValueError(f"targets {unknown or '()'}: choose from {', '.join(TARGETS)}")
    for name, spec in [*kind.params.items(), *(kind.portable or {}).items()]:
        if not isinstance(spec, Param):
            raise ValueError(f"params or portable key {name!r} is not a Param")
    twin = next((k for k in KINDS.registered() if k.name == kind.name and k.engine != kind.engine), None)
    if twin is not None and (twin.params != kind.params or twin.portable != kind.portable):
        raise ValueError(f"its {twin.engine} matcher declares other params or portable forms")


KINDS: Registry[RuleKind] = Registry(
    "rule kind", ("migrate.scan.python.kinds", "migrate.scan.text.kinds", "migrate.scan.onnx"), check=_check
)


def rule_kind(
    name: str,
    *,
    engine: str,
    params: Schema,
    tokens: Callable[..., Iterable[Any]],
    paths: tuple[str, ...] | None = None,
    compile: Callable[[tuple[Any, ...]], Any] | None = None,
    portable: Schema | None = None,
    refs: Callable[[Any], str | None] | None = None,
    reads: str | None = None,
    targets: tuple[str, ...] | None = None,
) -> Callable[[Callable], Callable]:
    """Register the decorated function as the ``engine`` matcher of kind ``name``.
    ``compile``: builds, once per run, what ``run`` gets in place of the kind's rules;
    ``portable``: the schema of a row's portable forms; ``refs``: checks a row's
    cross-references when the rules load; ``reads`` and ``targets``: what the matcher reads
    and the port targets it reports under (the prefilter skips files it cannot match)."""

    def wrap(run: Callable) -> Callable:
        KINDS.add(
            f"{engine}:{name}",
            RuleKind(name, engine, run, params, tokens, paths, compile, portable, refs, reads, targets),
        )
        return run

    return wrap


def kind(engine: str, name: str) -> RuleKind | None:
    return KINDS.get(f"{engine}:{name}")


def kinds_of(engine: str) -> list[RuleKind]:
    return [k for _, k in KINDS.items() if k.engine == engine]


def check_rule(rule: Any, rules: Sequence[Any]) -> None:
    """Validate one loaded rule against its kind: known kind and file kinds, an engine for
    every file kind it names, params and portable forms of the schema's keys and shapes (to
    full depth), its cross-references, Python prefilter tokens. Raises RuleError naming the
    file, the rule and the key."""
    where = f"{rule.source}: rule {rule.code}"
    unknown_files = [f for f in rule.files if f not in FILE_KINDS]
    if unknown_files:
        raise RuleError(
            f"{where}: files {unknown_files[0]!r} is not a file kind (known: {', '.join(FILE_KINDS)})"
        )
    engines = sorted({engine_of(f) for f in rule.files})
    specs = {e: kind(e, rule.kind) for e in engines}
    known = sorted({k.name for _, k in KINDS.items()})
    if rule.kind not in known:
        raise RuleError(f"{where}: unknown kind {rule.kind!r} (known: {', '.join(known)})")
    for engine, spec in specs.items():
        if spec is None:
            raise RuleError(
                f"{where}: kind {rule.kind!r} has no {engine} matcher, but the rule "
                f"lists {engine} files in `files`"
            )
    spec = next(s for s in specs.values() if s is not None)
    for key, value in rule.params.items():
        p = spec.schema.get(key)
        if p is None:
            raise RuleError(
                f"{where}: unknown params key {key!r} for kind {rule.kind!r} "
                f"(known: {', '.join(sorted(spec.schema))})"
            )
        if (why := p.problem(value, f"params key {key!r}")) is not None:
            raise RuleError(f"{where}: {why}")
    for key, p in spec.schema.items():
        if p.required and key not in rule.params:
            raise RuleError(f"{where}: kind {rule.kind!r} needs params key {key!r}")
    _check_portable(rule, spec, where)
    if spec.refs is not None and (why := spec.refs(rule)) is not None:
        raise RuleError(f"{where}: {why}")
    python = specs.get("python")
    if python is not None and not set(python.tokens(rule, rules)):
        raise RuleError(f"{where}: gives the Python prefilter no tokens (add params.prefilter)")


def _check_portable(rule: Any, spec: RuleKind, where: str) -> None:
    if not rule.portable:
        return
    if spec.portable is None:
        raise RuleError(
            f"{where}: kind {rule.kind!r} has no portable forms, but the rule gives "
            f"portable keys {sorted(rule.portable)}"
        )
    if (why := problems(spec.portable, rule.portable, "", what="portable key")) is not None:
        raise RuleError(f"{where}: {why}")
