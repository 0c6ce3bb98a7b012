"""Comments and docstrings hold no finding: a file whose tokens all sit there is not parsed
(migrate/scan/python/inert.py). The lexer must never call code inert."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from migrate.core.rules import default_rules, select_rules
from migrate.scan.python.inert import Inert, inert_spans
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


@pytest.mark.parametrize(
    ("source", "word", "place"),
    [
        (b'x = "CUDA kernel"\n', b"CUDA", "string"),
        (b"y = b'CUDA'\n", b"CUDA", "string"),
        (b'x = f"CUDA {torch.cuda.x}"\n', b"torch", "fstring"),
        (b'"""CUDA docs"""\n', b"CUDA", "inert"),
        (b"x = 1  # CUDA\n", b"CUDA", "inert"),
        (b'x = "a" + CUDA\n', b"CUDA", "code"),
        (b'x = "a"; torch.cuda.x()\n', b"cuda", "code"),
        (b'if"a"in x: CUDA\n', b"CUDA", "unsure"),
    ],
)
def test_place_says_what_holds_an_offset(source, word, place):
    assert Inert(source).place(source.index(word)) == place


def _prefilter():
    return RULESET.python("model.py").prefilter


def test_tokens_matter_only_where_their_kind_reads():
    """Names and imports (qualified-name, method-rename) are code: inside a string literal
    they make no finding; device strings (context-string) are strings: an identifier that
    holds "cuda" is not one. An f-string's fields are code."""
    pf = _prefilter()
    message = b'raise ValueError("the authors\' CUDA kernel")\nx = cuda_available_now()\n'
    assert pf.search(message) and not pf.search(message, code=True)
    assert scan_text(message.decode(), "model.py", "python", RULESET) == []
    assert pf.search(b'x = "cuda"\n', code=True)
    assert pf.search(b"s = torch.cuda.Stream()\n", code=True)
    assert pf.search(b'log(f"{torch.cuda.device_count()} GPUs")\n', code=True)
    assert pf.search(b'x = "from "; import bitsandbytes\n', code=True)  # the literal is code
    assert not pf.search(b'x = "import bitsandbytes"\n', code=True)


def _only(context: str) -> list[str]:
    """Literals of tokens of ``context`` that hold no literal of a token of another context
    (``xentropy_cuda`` in a string holds ``cuda``, which may be a device string)."""
    tokens = _prefilter().tokens
    other = {t.literal for t in tokens if t.context != context}
    own = {t.literal for t in tokens if t.context == context}
    return sorted(lit for lit in own if not any(o in lit for o in other))


@pytest.mark.parametrize("context", ["code", "strings"])
def test_every_code_token_in_a_string_and_string_token_in_code_yields_no_finding(context):
    """The contract the contexts rest on, for every shipped token that has one: a code-only
    literal inside a string literal, or a string-only literal spelled as a name, makes no
    finding when the file is parsed, and the file is not parsed."""
    pf = _prefilter()
    if context == "code":
        literals = [lit for lit in _only("code") if not set(lit) & set("\"'\\")]
        text = "".join(f"s{i} = {lit!r}\nt{i} = 'uses {lit} here'\n" for i, lit in enumerate(literals))
    else:
        literals = [lit for lit in _only("strings") if lit.isidentifier()]
        text = "".join(f"{lit} = 1\nprint({lit})\n" for lit in literals)
    assert len(literals) > (20 if context == "code" else 0)
    assert not pf.search(text.encode(), code=True)
    assert scan_text(text, "model.py", "python", RULESET) == []


def test_a_kind_that_reports_under_one_target_only_skips_files_for_the_others():
    source = b'def main():\n    pass\n\n\nif __name__ == "__main__":\n    main()\n'
    assert not RULESET.prefilter("train.py", "portable").search(source, code=True)
    assert not RULESET.prefilter("train.py", "npu").search(source, code=True)
    assert RULESET.prefilter("train.py", "transfer").search(source, code=True)
    text = source.decode()
    assert scan_text(text, "train.py", "python", RULESET, target="portable") == []
    assert [f.rule for f in scan_text(text, "train.py", "python", RULESET, target="transfer")]


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
