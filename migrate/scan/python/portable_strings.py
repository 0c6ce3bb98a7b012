"""--target portable for ``context-string`` rows: device and backend names kept generic.

The row's ``portable:`` mapping (all optional; templates use the device placeholders of
migrate/scan/python/device_names.py):

    prefix: cuda                  # the literal's device/backend name
    literal: '{device_type}'      # stands for the name ("cuda:0" -> {device_type} + ":0")
    device: '{device}'            # where a device is moved to: .to("cuda"), device="cuda",
                                  # map_location="cuda" (a `device` in scope, else the type)
    guarded: '{device_type}'      # the whole `"cuda" if torch.cuda.is_available() else "cpu"`
    amp: '{amp_device_type}'      # in autocast / GradScaler device positions
    spec: '{new} if {device_type} == "npu" else {old}'   # "cpu:gloo,cuda:nccl" style specs
    compare: {equal: in, value: '("cuda", "npu")', symmetric: false, contains: true}
                                  # x.type == "cuda"  ->  x.type in ("cuda", "npu"): the same
                                  # answer on CUDA and CPU hosts (and for non-strings), true on NPU
    startswith: '("cuda", "npu")' # s.startswith("cuda")  ->  s.startswith(("cuda", "npu"))
    collection_adds: npu          # ("cuda", "xpu") -> ("cuda", "xpu", "npu")
"""

from __future__ import annotations

import ast
import re

from migrate.core.findings import Edit, Fix
from migrate.scan.python.npu_ternary import cuda_available, cuda_first, guarded, npu_arm, npu_collection_arm
from migrate.scan.python.portable import declines, portable_fix, spell, whole_slot
from migrate.scan.python.portable_compare import compare_fix, startswith_fix
from migrate.scan.python.pyfile import partial_target

_AMP = re.compile(r"autocast|GradScaler|amp\.")
_TIGHT = (ast.Attribute, ast.Subscript, ast.BinOp, ast.UnaryOp, ast.Await)


# why a public function's lazy default waits for --unsafe-fixes (the finding is assisted)
PUBLIC_DEFAULT = (
    "a public function's default is part of its API: engineers keep it; "
    "`None` resolved in the body only with --unsafe-fixes"
)


def portable_literal(
    f, spec, node: ast.AST, value: str, fstring: bool, values: dict, body_start: int, body: str, quote: str
) -> tuple[Fix | None, str | None]:
    """The portable fix of a literal, and why it waits for --unsafe-fixes (None: it does
    not)."""
    fix = _literal(f, spec, node, value, fstring, values, body_start, body, quote)
    if fix is None:
        return None, None
    default = _default_of(f, node)
    if default is None:
        return fix, None
    lazy = lazy_default(f, spec.rule, *default, fix)
    if lazy is not None and lazy is not fix and _public(f, default[0]):
        return lazy.held_back(), PUBLIC_DEFAULT
    return lazy, None


def _public(f, fn) -> bool:
    """A function callers outside its module reach by name: defined at module level or in
    a class at module level, neither named private (``_x``; dunder methods are public)."""
    names = [fn.name]
    cur = f.parent(fn)
    while isinstance(cur, ast.ClassDef):
        names.append(cur.name)
        cur = f.parent(cur)
    if not isinstance(cur, ast.Module):
        return False  # a nested function: its module's business
    return not any(n.startswith("_") and not (n.startswith("__") and n.endswith("__")) for n in names)


@declines
def _literal(
    f, spec, node: ast.AST, value: str, fstring: bool, values: dict, body_start: int, body: str, quote: str
) -> Fix | None:
    forms = spec.rule.portable
    prefix = forms.get("prefix")
    if forms.get("spec") and not fstring and "," in value:
        return _spec(f, spec, node, value, values, forms["spec"])
    if not forms or not prefix or not value.startswith(prefix):
        return None
    tail = value[len(prefix) :]
    parent = f.parent(node)
    if _in_class_body(f, node):
        return None  # a class attribute's default: its value is part of the API; a person decides
    if isinstance(parent, (ast.Tuple, ast.List, ast.Set)):
        return _collection(f, spec, parent, forms, values, quote)
    if isinstance(parent, ast.Dict):
        return None  # a key or value of a table per device: a person adds the NPU entry
    if isinstance(parent, ast.Compare) and not fstring and not tail:
        return compare_fix(f, spec, node, parent, forms, tail, values, quote)
    if (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Attribute)
        and parent.func.attr == "startswith"
        and tail in ("", ":")
        and not fstring
        and forms.get("startswith")
    ):
        return startswith_fix(f, spec, node, parent, forms, values, tail)
    if not tail and not fstring and forms.get("guarded") and cuda_first(f, node, parent):
        arm = npu_arm(f, parent, quote[-1])
        if arm is not None:
            return _fix(spec, [arm[0]], values, arm[1], f"`{f.text[arm[0].start : arm[0].end]}`")
    if not tail and not fstring and forms.get("guarded") and guarded(f, node, parent):
        code, imports = spell(f, forms["guarded"], quote[-1], parent, bare=whole_slot(f, parent))
        a, b = f.span(parent)
        return _fix(spec, [Edit(a, b, code)], values, imports, f"`{code}`")
    template = _template(f, node, parent, forms, tail or fstring)
    if template is None:
        return None
    start, end = f.span(node)
    if fstring and isinstance(node, ast.JoinedStr):
        other = "'" if quote.endswith('"') else '"'
        code, imports = spell(f, template, other, node, bare=True)
        return _fix(
            spec,
            [Edit(body_start, body_start + len(prefix), "{" + code + "}")],
            values,
            imports,
            f"`f{quote}{{{code}}}{body[len(prefix) :]}{quote}`",
        )
    code, imports = spell(f, template, quote[-1], node, bare=not tail and whole_slot(f, node))
    if tail:
        rest = quote + tail + quote if not fstring else quote + body[len(prefix) :] + quote
        code = f"{code} + {rest}"
        joined = isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Add) and parent.left is node
        format_call = isinstance(parent, ast.Attribute) and parent.attr == "format"
        if isinstance(parent, _TIGHT) and not format_call and not joined:
            code = f"({code})"  # not in `"cuda:" + str(i)`: `+` joins from the left
    return _fix(spec, [Edit(start, end, code)], values, imports, f"`{code}`")


def _in_class_body(f, node) -> bool:
    """Is ``node`` part of a class attribute's value (a method's default is not: it is
    resolved in the method's body, see ``lazy_default``)?"""
    if _default_of(f, node) is not None:
        return False
    child, cur = node, f.parent(node)
    while cur is not None and not isinstance(cur, ast.stmt):
        child, cur = cur, f.parent(cur)
    if isinstance(cur, (*_DEFS, ast.ClassDef)) and any(d is child for d in cur.decorator_list):
        return False  # a method's decorator (`@torch.amp.custom_fwd(device_type="cuda")`)
    return cur is not None and isinstance(f.parent(cur), ast.ClassDef)


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _default_of(f, node) -> tuple[ast.AST, ast.arg, ast.AST] | None:
    """(function, parameter, default expression) where ``node`` is (in) a parameter's
    default value of a def (not a lambda), else None."""
    cur, child = f.parent(node), node
    while cur is not None and not isinstance(cur, (ast.arguments, ast.stmt, ast.Lambda)):
        cur, child = f.parent(cur), cur
    if not isinstance(cur, ast.arguments) or not isinstance(fn := f.parent(cur), _DEFS):
        return None
    positional = cur.posonlyargs + cur.args
    pairs = list(zip(positional[len(positional) - len(cur.defaults) :], cur.defaults))
    pairs += [(a, d) for a, d in zip(cur.kwonlyargs, cur.kw_defaults) if d is not None]
    for arg, default in pairs:
        if default is child:
            return fn, arg, default
    return None


def _expression(code: str) -> ast.expr | None:
    try:
        return ast.parse(code, mode="eval").body
    except SyntaxError:
        return None


def lazy_default(f, rule, fn, arg: ast.arg, default: ast.AST, fix: Fix) -> Fix | None:
    """A default that would ask the accelerator when the module is imported
    (``device="cuda"`` -> ``device=get_device_type()``) becomes ``None``, resolved on the
    first line of the body, as engineers write it. Upstream NPU ports of libraries often
    leave such a default alone (their callers pass the device), but a default that keeps
    naming CUDA sends every call that relies on it to CUDA: on an NPU host the program never
    reaches the NPU (a script's ``train(model)``, timm train.py's ``--device``)::

        def f(x, device=None):
            if device is None:
                device = get_device_type()

    Where None already means something to the function (it tests ``device is None``), or
    the body cannot take a statement, the port is left to a person (None)."""
    a, b = f.span(default)
    if not all(a <= e.start and e.end <= b for e in fix.edits):
        return fix
    new = f.text[a:b]
    for e in sorted(fix.edits, reverse=True):
        new = new[: e.start - a] + e.content + new[e.end - a :]
    if "(" not in new or "\n" in new:
        return fix  # a name, read when the def runs: as cheap as the literal was
    if new.startswith("(") and new.endswith(")") and isinstance(_expression(new), ast.IfExp):
        new = new[1:-1]  # the whole value of an assignment needs no parentheses
    name = arg.arg
    if _tests_none(fn, name) or any(isinstance(n, ast.Lambda) for n in ast.walk(default)):
        return None
    where = _body_start(f, fn)
    if where is None:
        return None
    at, indent = where
    one = "    " if indent.startswith(" ") or not indent else "\t"
    block = f"{indent}if {name} is None:\n{indent}{one}{name} = {new}\n"
    edits = [Edit(a, b, "None"), Edit(at, at, block)]
    imports = list(fix.imports)
    widened = _admitting_none(f, arg.annotation)
    if widened is not None:  # `device: str = None` would lie: `Optional[str]` / `str | None`
        (start, end, text), more = widened
        edits.append(Edit(start, end, text))
        imports += more
    return portable_fix(rule, edits, imports, f"`{name}=None`, then `{name} = {new}` in the body")


def _admitting_none(f, ann: ast.expr | None) -> tuple[tuple[int, int, str], list[str]] | None:
    """The edit that lets the annotation ``ann`` take None, and the imports it needs, as the
    file writes it: ``X | None`` where annotations are not evaluated at run time (``from
    __future__ import annotations``) or the file writes them so already, else
    ``Optional[X]`` (from typing, imported if the file does not have it). None when it
    admits None already, or is a string."""
    if ann is None or isinstance(ann, ast.Constant) or _admits_none(f, ann):
        return None
    start, end = f.span(ann)
    text = f.text[start:end]
    if _writes_union(f):
        return (start, end, f"{text} | None"), []
    local = f.bindings.local_for("typing.Optional")
    if local is not None:
        return (start, end, f"{local}[{text}]"), []
    return (start, end, f"Optional[{text}]"), ["from typing import Optional"]


def _admits_none(f, ann: ast.expr) -> bool:
    if isinstance(ann, ast.Constant) and ann.value is None:
        return True
    if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr):
        return _admits_none(f, ann.left) or _admits_none(f, ann.right)
    qual = f.qualname(ann.value if isinstance(ann, ast.Subscript) else ann) or ""
    if qual in ("typing.Any", "typing.Optional", "typing_extensions.Any"):
        return True
    if qual == "typing.Union" and isinstance(ann, ast.Subscript):
        parts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
        return any(_admits_none(f, p) for p in parts)
    return isinstance(ann, ast.Name) and ann.id in ("object", "Any", "Optional")


def _writes_union(f) -> bool:
    """Does the file leave annotations unevaluated, or write ``X | None`` in one already
    (then it runs on Python 3.10+ only)?"""
    for n in f.tree.body:
        if isinstance(n, ast.ImportFrom) and n.module == "__future__":
            if any(a.name == "annotations" for a in n.names):
                return True
    if "| None" not in f.text and "None |" not in f.text:
        return False
    for node in ast.walk(f.tree):  # rare: only where a default is resolved in the body
        anns: list[ast.expr | None] = []
        if isinstance(node, ast.arg | ast.AnnAssign):
            anns = [node.annotation]
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            anns = [node.returns]
        for ann in anns:
            if isinstance(ann, ast.BinOp) and isinstance(ann.op, ast.BitOr) and _admits_none(f, ann):
                return True
    return False


def _tests_none(fn, name: str) -> bool:
    """Does the function compare ``name`` with None (so None means something to it)?"""
    for node in ast.walk(fn):
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(x, ast.Name) and x.id == name for x in sides) and any(
                isinstance(x, ast.Constant) and x.value is None for x in sides
            ):
                return True
    return False


def _resolves_default(stmt) -> bool:
    """`if x is None: x = ...`: a default resolved by an earlier port (kept first)."""
    return (
        isinstance(stmt, ast.If)
        and not stmt.orelse
        and isinstance(stmt.test, ast.Compare)
        and isinstance(stmt.test.left, ast.Name)
        and isinstance(stmt.test.ops[0], ast.Is)
        and isinstance(stmt.test.comparators[0], ast.Constant)
        and stmt.test.comparators[0].value is None
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], ast.Assign)
        and [getattr(t, "id", None) for t in stmt.body[0].targets] == [stmt.test.left.id]
    )


def _body_start(f, fn) -> tuple[int, str] | None:
    """(offset, indentation) where a statement goes first in ``fn``'s body: after its
    docstring and defaults resolved already; None where the body shares the def's line."""
    body = fn.body
    i = 0
    if isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        if isinstance(body[0].value.value, str):
            i = 1
    while i < len(body) and _resolves_default(body[i]):
        i += 1
    first = body[0]
    line_text = f.text[f.index.starts[first.lineno - 1] :].split("\n", 1)[0]
    indent = line_text[: len(line_text) - len(line_text.lstrip())]
    if f.span(first)[0] != f.index.starts[first.lineno - 1] + len(indent):
        return None  # the body shares the def's line, or follows a `;`
    if i < len(body):
        stmt = body[i]
        start = f.index.starts[stmt.lineno - 1]
        if f.text[start : f.span(stmt)[0]].strip():
            return None  # `a; b` on one line
        return start, indent
    end = f.span(body[-1])[1]
    nl = f.text.find("\n", end)
    if nl == -1 or f.text[end:nl].strip() and not f.text[end:nl].strip().startswith("#"):
        return None
    return nl + 1, indent


def _template(f, node, parent, forms, indexed) -> str | None:
    call = parent if isinstance(parent, ast.Call) else None
    if isinstance(parent, ast.keyword):
        call = f.parent(parent)
    if isinstance(call, ast.Call) and forms.get("amp"):
        func = partial_target(f, call)[0]
        if _AMP.search(f.qualname(func) or f.source(func)):
            return forms["amp"]
    if not indexed and forms.get("device") and _moved_to(parent, node):
        return forms["device"]
    return forms.get("literal")


_MOVES = ("device", "map_location")


def _moved_to(parent, node) -> bool:
    """Is the literal where something is moved to a device: `.to("cuda")`, `device="cuda"`,
    `map_location="cuda"`?"""
    if isinstance(parent, ast.keyword):
        return parent.arg in _MOVES
    return (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Attribute)
        and parent.func.attr == "to"
        and bool(parent.args)
        and parent.args[0] is node
    )


def _spec(f, spec, node, value: str, values: dict, template: str) -> Fix | None:
    """ "cpu:gloo,cuda:nccl" -> ("cpu:gloo,npu:hccl" if get_device_type() == "npu" else
    "cpu:gloo,cuda:nccl"): each host gets the spec it had, the NPU its own."""
    new = values.get("new")
    if not new or new == value or not isinstance(node, ast.Constant):
        return None
    start, end = f.span(node)
    old = f.text[start:end]
    q = old[-1]
    code, imports = spell(f, template, q, node, new=q + new + q, old=old)
    parent = f.parent(node)
    if not isinstance(parent, (ast.keyword, ast.Call, ast.Assign, ast.AnnAssign, ast.Return)):
        code = f"({code})"
    return _fix(spec, [Edit(start, end, code)], values, imports, f"`{code}`")


def _collection(f, spec, coll, forms, values, quote) -> Fix | None:
    add = forms.get("collection_adds")
    if (
        not add
        or not coll.elts
        or not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in coll.elts)
    ):
        return None  # only a plain list of names: (check_fn, "cuda") pairs are a table row
    if any(isinstance(e, ast.Constant) and e.value == add for e in coll.elts):
        return None
    holder = f.parent(coll)
    if isinstance(holder, (ast.Tuple, ast.List, ast.Set)):
        return None  # a row of a table (`[("cpu",), ("cuda",)]`): a person adds the NPU's row
    q = quote[-1] if quote else '"'
    if isinstance(holder, ast.IfExp) and holder.body is coll and cuda_available(f, holder.test):
        # the devices there are when CUDA is: the NPU's own list, never "npu" added to CUDA's
        arm = npu_collection_arm(f, holder, q)
        if arm is None:
            return None
        return _fix(spec, [arm[0]], values, arm[1], "an NPU arm with its own list")
    edit = _added_member(f, coll, f"{q}{add}{q}")
    return _fix(spec, [edit], values, [], f"add {q}{add}{q} beside it")


def _added_member(f, coll, member: str) -> Edit:
    """The edit that adds ``member`` after a collection's last element, laid out as a
    formatter (ruff, black) keeps it: a one-element tuple's required comma goes, so
    ``("cuda",)`` becomes ``("cuda", "npu")`` (a comma left after the new last element
    is a magic trailing comma: the formatter would explode the tuple), and a collection
    written one element per line with a trailing comma gets the member on a line of its
    own."""
    first_start, _ = f.span(coll.elts[0])
    last_start, last_end = f.span(coll.elts[-1])
    _, coll_end = f.span(coll)
    after = f.text[last_end:coll_end]
    comma = after.find(",")
    if comma < 0 or after[:comma].strip():
        return Edit(last_end, last_end, f", {member}")
    line_start = f.text.rfind("\n", 0, last_start) + 1
    indent = f.text[line_start:last_start]
    if "\n" in after[comma:] and not indent.strip():
        at = last_end + comma + 1
        return Edit(at, at, f"\n{indent}{member},")
    if isinstance(coll, ast.Tuple) and len(coll.elts) == 1:
        return Edit(last_end, last_end + comma + 1, f", {member}")
    return Edit(last_end, last_end, f", {member}")


def _fix(spec, edits, values, imports, shown: str) -> Fix:
    return portable_fix(spec.rule, edits, imports, shown)
