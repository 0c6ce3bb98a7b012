"""Comments and docstrings hold no finding: a file whose tokens all sit there is not parsed
(migrate/scan/python/inert.py). The lexer must never call code inert."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from migrate.core.rules import default_rules, select_rules
from migrate.scan.python.inert import inert_spans
from migrate.scan.readers import scan_text
from migrate.scan.ruleset import RuleSet

RULESET = RuleSet(select_rules(default_rules(), None, None, ["MIG9"]))


@pytest.mark.parametrize(
    ("source", "inert"),
    [
        (b'"""doc cuda"""\nx = 1\n', [b'"""doc cuda"""']),
        (b'def f():\n    """Move it: x.cuda()"""\n    return 1\n', [b'"""Move it: x.cuda()"""']),
        (b"x = 1  # cuda here\n", [b"# cuda here"]),
        (b'x = 1; """a b"""\n', [b'"""a b"""']),
        (b'x = "abc\\\ndef"\n"""a b"""\n', [b'"""a b"""']),
        (b'r"""a \\""" b"""\n', [b'r"""a \\""" b"""']),
        (b'rb"a b"\r\n', [b'rb"a b"']),
        # strings that are values, not statements
        (b'x = """doc cuda"""\n', []),
        (b'f(\n    """doc cuda"""\n)\n', []),
        (b'x = \\\n"""a b"""\n', []),
        (b'"""a b""" + x\n', []),
        (b'lam = lambda: """a b"""\n', []),
        (b'x: "torch.cuda.Stream" = None\n', []),
        (b'"CUDA_VISIBLE_DEVICES"\n', []),  # a bare name: env-var reads any string constant
        (b'"""a b""""x y"\n', []),  # the second string follows the first on its line
    ],
)
def test_inert_spans(source, inert):
    spans = inert_spans(source)
    assert spans is not None
    assert [source[a:b] for a, b in spans] == inert


@pytest.mark.parametrize(
    "source",
    [
        b'if"cuda"in x: pass\n',  # no space before a string: not read as one
        b'y = f"{d["cuda"]}"\n',  # Python 3.12 nests quotes in f-string fields
        b'x = "abc\ndef"\n',  # unterminated
        b'x = "open\n',
    ],
)
def test_the_lexer_says_when_it_is_unsure(source):
    assert inert_spans(source) is None


def _prefilter():
    return RULESET.python("model.py").prefilter


def test_tokens_in_comments_and_docstrings_skip_the_file():
    pf = _prefilter()
    doc = (
        b'"""Example:\n\n    >>> model.cuda()\n    >>> x.to("cuda")\n"""\nimport torch  # needs torch.cuda\n'
    )
    assert pf.search(doc) and not pf.search(doc, code=True)
    assert pf.search(doc + b"y = x.cuda()\n", code=True)
    assert pf.search(b'if"x"in y: z.cuda()  # unsure lexer: parsed\n', code=True)


def test_every_rule_token_in_comments_and_docstrings_yields_no_finding():
    """The contract the skip rests on, for every token of every shipped rule: placed in a
    comment and in a docstring of a file, it makes no finding when the file is parsed."""
    pf = _prefilter()
    literals = sorted({t.literal for t in pf.tokens})
    body = "\n".join(
        f'def f{i}():\n    """See {lit} here."""\n    # {lit}\n    return {i}\n'
        for i, lit in enumerate(literals)
    )
    text = f'"""Module {" ".join(literals)} notes."""\n# {" ".join(literals)}\n{body}'
    assert not pf.search(text.encode(), code=True)
    assert scan_text(text, "model.py", "python", RULESET) == []


def test_skipped_real_files_have_no_findings():
    """Over installed torch and transformers sources: every file the code-only search skips
    (and the byte search would have parsed) has no finding when parsed."""
    specs = [importlib.util.find_spec(name) for name in ("transformers", "torch")]
    roots = [Path(s.origin).parent for s in specs if s is not None and s.origin]
    if not roots:
        pytest.skip("neither transformers nor torch is installed")
    pf = _prefilter()
    skipped = 0
    for root in roots:
        for path in sorted(root.rglob("*.py"))[:1500]:
            data = path.read_bytes()
            if pf.search(data) and not pf.search(data, code=True):
                skipped += 1
                text = data.decode("utf-8", "replace")
                assert scan_text(text, "m.py", "python", RULESET) == [], path
    assert skipped > 10
