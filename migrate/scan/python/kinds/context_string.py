"""Kind ``context-string``: string literals that denote a device or backend ("cuda:0", "nccl").

A literal is only considered where a device/backend is meant (never in log messages):

    params:
      match: '^cuda(:\\d+)?$'            # fullmatch on the literal's value
      fstring_prefix: '^cuda(:|$)'       # f-strings: their leading literal text
      replace: [['^cuda', 'npu']]        # substitutions applied to the literal's body
      calls: {torch.device: [0], '*.to': [0], torch.load: [map_location]}   # positions
      keywords: [device, map_location]   # keyword arguments of any call
      names: '(^|_)device$'              # variables, attributes, parameters, dict keys,
                                         # argparse options whose name says "device"
      compare: true                      # x.device.type == "cuda", backend in ("nccl",)
      compare_not_names: '(^|_)ort(_|$)' # ... but not when a compared name says otherwise
                                         # (ort_fusions == "cuda": an ONNX Runtime key)
      compare_not_with: '^(dml|webgpu)$' # ... nor a collection holding such a string
                                         # (("cpu", "cuda", "webgpu", "dml"): ORT providers)
      ifexp_test: 'is_available'         # "cuda" if torch.cuda.is_available() else "cpu"
      anywhere: true                     # any string literal but docstrings (for values that
                                         # cannot mean anything else: "torch.cuda.FloatTensor")
      device_tables: true                # {"cpu": -1, "cuda": 1024}: the NPU's entry added
                                         # (migrate/scan/python/device_tables.py)
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterator
from typing import Any

from migrate.core.findings import Edit, fix_for
from migrate.core.kinds import param, prefilter_words, rule_kind
from migrate.core.rules import Rule
from migrate.core.schema import mapping, record, regex, strings
from migrate.core.targets import template
from migrate.scan.python.device_tables import report_table
from migrate.scan.python.portable import declines, portable_fix, spell, whole_slot
from migrate.scan.python.portable_strings import portable_literal
from migrate.scan.python.pyfile import PyFile, partial_target

_STRING_PREFIX = re.compile(r"[rRuUbBfF]{0,2}('''|\"\"\"|'|\")")


class Spec:
    def __init__(self, rule: Rule):
        p = rule.params
        self.rule = rule
        self.match = re.compile(p["match"])
        self.fprefix = re.compile(p["fstring_prefix"]) if p.get("fstring_prefix") else None
        self.replace = [(re.compile(a), b) for a, b in p.get("replace", [])]
        self.calls: dict[str, list] = p.get("calls") or {}
        self.keywords = set(p.get("keywords") or ())
        self.names = re.compile(p["names"], re.IGNORECASE) if p.get("names") else None
        self.compare = bool(p.get("compare"))
        self.not_names = (
            re.compile(p["compare_not_names"], re.IGNORECASE) if p.get("compare_not_names") else None
        )
        self.not_with = re.compile(p["compare_not_with"]) if p.get("compare_not_with") else None
        self.ifexp = re.compile(p["ifexp_test"]) if p.get("ifexp_test") else None
        self.anywhere = bool(p.get("anywhere"))
        self.track = bool(p.get("track_variables"))
        self.tables = bool(p.get("device_tables"))

    def use_pattern(self) -> str:
        """A regex (NAME stands for the variable) for a use of a variable in a position."""
        keywords = "|".join(re.escape(k) for k in sorted(self.keywords))
        calls = [q.rsplit(".", 1)[-1] for q, pos in self.calls.items() if 0 in pos]
        call_re = "|".join(re.escape(c) for c in sorted(set(calls)))
        return rf"(?:\b(?:{keywords})\s*=\s*|\b(?:{call_re})\(\s*)NAME\b(?!\s*[.(\[])"

    def name_hit(self, name: str | None) -> bool:
        return bool(name and self.names and self.names.search(name.lstrip("-").replace("-", "_")))


def _specs(rules: tuple[Rule, ...]) -> tuple[Spec, ...]:
    """The rows of a run, their regexes compiled once (the kind's ``compile`` hook)."""
    return tuple(Spec(r) for r in rules)


def _pair(value) -> str | None:
    if len(value) != 2:
        return f"a [pattern, replacement] pair has 2 strings, not {len(value)}"
    return regex(value[0])


PARAMS = {
    "match": param(str, required=True, check=regex, doc="fullmatch on the literal's value"),
    "fstring_prefix": param(str, check=regex, doc="f-strings: regex on their leading literal text"),
    "replace": param(
        list,
        items=param(list, items=param(str), check=_pair),
        doc="[pattern, replacement] pairs applied to the literal",
    ),
    "calls": mapping(
        param(list, items=param(int, str)), doc="qualified call -> argument positions / keyword names"
    ),
    "keywords": strings(doc="keyword arguments of any call"),
    "names": param(str, check=regex, doc="regex on variable / attribute / parameter / option names"),
    "compare": param(bool, doc="comparisons and membership tests"),
    "compare_not_names": param(
        str, check=regex, doc="regex on a compared name that makes the comparison not of devices"
    ),
    "compare_not_with": param(
        str, check=regex, doc="a compared collection holding a string this fullmatches is not of devices"
    ),
    "ifexp_test": param(str, check=regex, doc="regex on the test of a conditional expression"),
    "anywhere": param(bool, doc="any string literal but docstrings"),
    "track_variables": param(bool, doc="variables later passed where a device is meant"),
    "device_tables": param(bool, doc='a dict keyed by device types gains the NPU\'s entry after "cuda"'),
}
# --target portable: the forms migrate/scan/python/portable_strings.py reads
PORTABLE = {
    "prefix": param(str, doc="the literal's device/backend name"),
    "literal": param(str, check=template, doc="what stands for the name elsewhere"),
    "device": param(str, check=template, doc="where a device (not only its type) is meant"),
    "spec": param(
        str,
        check=lambda v: template(v, "new", "old"),
        doc='a backend spec string ("cpu:gloo,cuda:nccl"): {new} / {old} spellings',
    ),
    "guarded": param(str, check=template, doc="in `X if torch.cuda.is_available() else Y`"),
    "amp": param(str, check=template, doc="in autocast / GradScaler device positions"),
    "compare": record(
        equal=param(str, required=True),
        not_equal=param(str),
        value=param(str, required=True),
        symmetric=param(bool),
        contains=param(bool),
        doc='x.type == "cuda" -> x.type in (...)',
    ),
    "startswith": param(str, doc='s.startswith("cuda") -> s.startswith(<this>)'),
    "collection_adds": param(str, doc="the name added to a tuple/list/set of names"),
}


@rule_kind(
    "context-string",
    engine="python",
    params=PARAMS,
    tokens=prefilter_words,
    compile=_specs,
    portable=PORTABLE,
    reads="strings",
)
def run(f: PyFile, specs: tuple[Spec, ...]) -> None:
    anywhere = [s for s in specs if s.anywhere]
    if anywhere:
        for node in f.nodes(ast.Constant):
            if isinstance(node.value, str) and not isinstance(f.parent(node), ast.Expr):
                for spec in anywhere:
                    _check_value(f, spec, node)
    specs = tuple(s for s in specs if not s.anywhere)
    for spec in specs:
        if spec.track:
            for value in _tracked_assignments(f, spec):
                _check_value(f, spec, value)
    constants: dict[str, ast.Constant] | None = None
    for node in f.nodes(
        ast.Call, ast.Assign, ast.AnnAssign, ast.arguments, ast.Dict, ast.Compare, ast.IfExp, ast.Return
    ):
        for spec in specs:
            if spec.tables and isinstance(node, ast.Dict):
                report_table(f, spec, node)
            for value in _positions(f, spec, node):
                if isinstance(value, ast.Name) and isinstance(node, ast.Call):
                    if constants is None:
                        constants = _self_named_constants(f)
                    _named_constant(f, spec, value, constants.get(value.id))
                else:
                    _check_value(f, spec, value)


def _self_named_constants(f: PyFile) -> dict[str, ast.Constant]:
    """Module-level constants that name their value (ignite's ``NCCL = "nccl"``): left as
    written (a name, not a choice: scan/python/awareness.py), so the port decides at each
    call that passes one where a device or backend is meant."""
    out: dict[str, ast.Constant] = {}
    for node in f.tree.body:
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
            and node.targets[0].id.lower() == node.value.value.lower()
        ):
            out[node.targets[0].id] = node.value
    return out


def _named_constant(f: PyFile, spec: Spec, name: ast.Name, constant: ast.Constant | None) -> None:
    """``init_process_group(NCCL)``: reported at the call, fixed there (``"hccl" if <NPU>
    else NCCL`` in a portable port, ``"hccl"`` for the NPU); the constant stays."""
    value = constant.value if constant is not None else None
    if not isinstance(value, str) or not spec.match.fullmatch(value):
        return
    new = value
    for pattern, repl in spec.replace:
        new = pattern.sub(repl, new)
    if new == value:
        return
    source = f.source(constant) if constant is not None else ""
    quote = source[-1] if source[-1:] in ("'", '"') else '"'
    start, end = f.span(name)
    values = {"value": value, "new": new}
    fix = None
    if f.target == "portable":
        fix = _portable_named(f, spec, name, quote, value)
    else:
        fix = fix_for(spec.rule, [Edit(start, end, f"{quote}{new}{quote}")], values)
    f.report(spec.rule, start, end, values, fix)


@declines
def _portable_named(f: PyFile, spec: Spec, name: ast.Name, quote: str, value: str):
    template = spec.rule.portable.get("literal") if spec.rule.portable else None
    if not template:
        return None
    code, imports = spell(f, template, quote, name, bare=whole_slot(f, name))
    code = code.replace(f"{quote}{value}{quote}", name.id)
    start, end = f.span(name)
    return portable_fix(spec.rule, [Edit(start, end, code)], imports, f"`{code}`")


def _positions(f: PyFile, spec: Spec, node: ast.AST) -> Iterator[ast.AST]:
    if isinstance(node, ast.Call):
        yield from _call_positions(f, spec, node)
    elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        if any(spec.name_hit(_target_name(t)) for t in targets):
            yield node.value
    elif isinstance(node, ast.arguments):
        yield from _default_positions(spec, node)
    elif isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and spec.name_hit(key.value):
                yield value
    elif (
        isinstance(node, ast.Compare)
        and spec.compare
        and _of_devices(spec, node)
        and not _picks_provider(f, spec, node)
    ):
        for operand in [node.left, *node.comparators]:
            if isinstance(operand, (ast.Constant, ast.Tuple, ast.List, ast.Set)):
                yield operand
            elif isinstance(operand, (ast.ListComp, ast.SetComp, ast.GeneratorExp)):
                yield operand.elt  # d in {f"cuda:{i}" for i in ...}: rewritten with d
    elif isinstance(node, ast.IfExp) and spec.ifexp and spec.ifexp.search(f.source(node.test)):
        yield node.body
        yield node.orelse
    if (
        isinstance(node, (ast.Return, ast.Assign))
        and isinstance(node.value, ast.Constant)
        and spec.ifexp is not None
        and _under_available_test(f, spec, node)
    ):
        yield node.value  # `if torch.cuda.is_available(): return "cuda"`: the device it chose


def _under_available_test(f: PyFile, spec: Spec, node: ast.AST) -> bool:
    """Is ``node`` in the body (not the else) of an ``if`` of its function whose test asks
    whether CUDA is available? A value returned or assigned there names the device the test
    chose, and a port that opens the test to the NPU must spell it for the NPU too."""
    child, parent = node, f.parent(node)
    while parent is not None and not isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        if isinstance(parent, ast.If) and any(child is s for s in parent.body):
            test = f.source(parent.test)
            if "cuda" in test and spec.ifexp is not None and spec.ifexp.search(test):
                return True
        child, parent = parent, f.parent(parent)
    return False


def _picks_provider(f: PyFile, spec: Spec, node: ast.Compare) -> bool:
    """Does the ``if`` (or conditional expression) this comparison tests choose ONNX
    Runtime providers in its arm (kornia: ``elif device.type == "cuda": return
    ["CUDAExecutionProvider", ...]``)? Its "cuda" is then the key of CUDA's provider: the
    NPU's is another (CANNExecutionProvider), a person's choice, never CUDA's widened."""
    if not spec.not_with:
        return False
    holder = f.parent(node)
    while isinstance(holder, (ast.BoolOp, ast.UnaryOp)):
        holder = f.parent(holder)
    if isinstance(holder, ast.If) and f.parent(node) is not None and _tests(holder, node):
        arm: list[ast.AST] = list(holder.body)
    elif isinstance(holder, ast.IfExp) and _tests(holder, node):
        arm = [holder.body]
    else:
        return False
    return any(
        isinstance(c, ast.Constant)
        and isinstance(c.value, str)
        and spec.not_with.fullmatch(c.value) is not None
        and c.value.endswith("ExecutionProvider")
        for stmt in arm
        for c in ast.walk(stmt)
    )


def _tests(holder: ast.If | ast.IfExp, node: ast.AST) -> bool:
    return any(n is node for n in ast.walk(holder.test))


def _of_devices(spec: Spec, node: ast.Compare) -> bool:
    """False when a compared name (``ort_fusions == "cuda"``) or a compared collection's
    other strings (``("cpu", "cuda", "webgpu", "dml")``: ONNX Runtime's provider keys) say
    that its "cuda" is not a torch device."""
    for operand in [node.left, *node.comparators]:
        if spec.not_names:
            name = _target_name(operand) if isinstance(operand, (ast.Name, ast.Attribute)) else None
            if name and spec.not_names.search(name):
                return False
        if spec.not_with and isinstance(operand, (ast.Tuple, ast.List, ast.Set)):
            for elt in operand.elts:
                if (
                    isinstance(elt, ast.Constant)
                    and isinstance(elt.value, str)
                    and spec.not_with.fullmatch(elt.value)
                ):
                    return False
    return True


def _call_positions(f: PyFile, spec: Spec, call: ast.Call) -> Iterator[ast.AST]:
    func, args = partial_target(f, call)
    qual = f.qualname(func)
    wanted: list = spec.calls.get(qual, []) if qual else []
    if not wanted and isinstance(func, ast.Attribute):
        wanted = spec.calls.get("*." + func.attr, [])
    for pos in wanted:
        if isinstance(pos, int) and pos < len(args):
            yield args[pos]
    for kw in call.keywords:
        if kw.arg and (kw.arg in spec.keywords or kw.arg in wanted):
            yield kw.value
    if isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument":
        options = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        options += [
            kw.value.value
            for kw in call.keywords
            if kw.arg == "dest" and isinstance(kw.value, ast.Constant) and isinstance(kw.value.value, str)
        ]
        if any(spec.name_hit(o) for o in options):
            for kw in call.keywords:
                if kw.arg in ("default", "choices", "const"):
                    yield kw.value


def _default_positions(spec: Spec, args: ast.arguments) -> Iterator[ast.AST]:
    positional = args.posonlyargs + args.args
    for arg, default in zip(positional[len(positional) - len(args.defaults) :], args.defaults):
        if spec.name_hit(arg.arg):
            yield default
    for arg, kw_default in zip(args.kwonlyargs, args.kw_defaults):
        if kw_default is not None and spec.name_hit(arg.arg):
            yield kw_default


def _target_name(target: ast.AST) -> str | None:
    if isinstance(target, ast.Name):
        return target.id
    if isinstance(target, ast.Attribute):
        return target.attr
    if isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant):
        return target.slice.value if isinstance(target.slice.value, str) else None
    return None


def _check_value(f: PyFile, spec: Spec, value: ast.AST) -> None:
    """Report the device literals ``value`` holds (per node type: VALUE_CHECKS)."""
    check = VALUE_CHECKS.get(type(value))
    if check is not None:
        check(f, spec, value)


def _literal(f: PyFile, spec: Spec, value: ast.Constant) -> None:
    if isinstance(value.value, str) and spec.match.fullmatch(value.value):
        _report_literal(f, spec, value, value.value)


def _fstring(f: PyFile, spec: Spec, value: ast.JoinedStr) -> None:
    head = value.values[0] if value.values else None
    if (
        spec.fprefix
        and isinstance(head, ast.Constant)
        and isinstance(head.value, str)
        and spec.fprefix.search(head.value)
    ):
        _report_literal(f, spec, value, head.value, fstring=True)


def _template(f: PyFile, spec: Spec, value: ast.AST) -> None:
    """ "cuda:{}".format(i), "cuda:%d" % i, "cuda:" + str(i)."""
    template = _formatted(value)
    if spec.fprefix and template is not None and spec.fprefix.search(str(template.value)):
        _report_literal(f, spec, template, str(template.value), fstring=True)


def _each(*fields: str) -> Callable[[PyFile, Spec, Any], None]:
    """Check the values under these fields (a node or a list of nodes, None skipped)."""

    def check(f: PyFile, spec: Spec, value: Any) -> None:
        for name in fields:
            part = getattr(value, name)
            for item in part if isinstance(part, list) else [part]:
                if item is not None:
                    _check_value(f, spec, item)

    return check


# Node type -> how a value of that type can hold a device literal: the literal itself, an
# f-string or format template, or the branches / elements / items that may hold one.
VALUE_CHECKS: dict[type, Callable[[PyFile, Spec, Any], None]] = {
    ast.Constant: _literal,
    ast.JoinedStr: _fstring,
    ast.Call: _template,
    ast.BinOp: _template,
    ast.IfExp: _each("body", "orelse"),
    ast.BoolOp: _each("values"),
    ast.Tuple: _each("elts"),
    ast.List: _each("elts"),
    ast.Set: _each("elts"),
    ast.ListComp: _each("elt"),
    ast.SetComp: _each("elt"),
    ast.GeneratorExp: _each("elt"),
    ast.DictComp: _each("value"),
    ast.Dict: _each("keys", "values"),
}


def _formatted(value: ast.AST) -> ast.Constant | None:
    """The template string of "...".format(...) or "..." % x, if that is what value is."""
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "format":
        value = value.func.value
    elif isinstance(value, ast.BinOp) and isinstance(value.op, (ast.Mod, ast.Add)):
        value = value.left  # "cuda:%d" % i, "cuda:" + str(i)
    else:
        return None
    return value if isinstance(value, ast.Constant) and isinstance(value.value, str) else None


def _tracked_assignments(f: PyFile, spec: Spec) -> Iterator[ast.AST]:
    """`loc = "cuda:{}".format(gpu)` ... `torch.load(p, map_location=loc)`: a variable with
    any name, assigned on a flagged line and used in a device position elsewhere."""
    used: set[str] | None = None  # every name the file uses in a position: one pass
    for node in f.nodes(ast.Assign):
        if len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        name = node.targets[0].id
        if spec.name_hit(name) or not _holds_candidate(spec, node.value):
            continue  # already a position by its name, or no string that could match
        if used is None:  # (a search per assignment made a file of N of them cost N passes)
            used = set(re.findall(spec.use_pattern().replace("NAME", r"([^\W\d]\w*)"), f.text))
        if name in used:
            yield node.value


def _holds_candidate(spec: Spec, value: ast.AST) -> bool:
    """Cheap test before searching the file for uses: does value hold a matching string?"""
    for sub in ast.walk(value):
        if (
            isinstance(sub, ast.Constant)
            and isinstance(sub.value, str)
            and (spec.match.fullmatch(sub.value) or (spec.fprefix and spec.fprefix.search(sub.value)))
        ):
            return True
    return False


def _report_literal(f: PyFile, spec: Spec, node: ast.AST, value: str, fstring: bool = False) -> None:
    start, end = f.span(node)
    src = f.text[start:end]
    m = _STRING_PREFIX.match(src)
    new_value = value
    for pattern, repl in spec.replace:
        new_value = pattern.sub(repl, new_value)
    values = {"value": value, "new": new_value}
    fix, held = None, None
    if m and src.endswith(m.group(1)) and len(src) >= m.end() + len(m.group(1)):
        body = src[m.end() : len(src) - len(m.group(1))]
        ok = body.startswith(value) if fstring else body == value
        if ok:
            new_body = new_value + body[len(value) :]
            if fstring:  # the message shows the whole f-string body: "cuda:{rank}"
                values = {"value": body, "new": new_body}
            if f.target == "portable":
                fix, held = portable_literal(
                    f, spec, node, value, fstring, values, start + m.end(), body, m.group(1)
                )
            elif new_value != value:
                fix = fix_for(
                    spec.rule, [Edit(start + m.end(), start + m.end() + len(body), new_body)], values
                )
    f.report(spec.rule, start, end, values, fix, held)
