"""--annotate / --strip-annotations."""

from __future__ import annotations

from migrate.core.findings import Finding
from migrate.fix.annotate import annotate, strip_annotations


def manual(line, rule="MIG503", msg="custom CUDA kernel: port it to an Ascend C operator", category="manual"):
    return Finding(rule, "cuda-extension", "t.py", line, 1, line, 5, msg, category)


SRC = '''import torch
from torch.utils.cpp_extension import load

doc = """
text""" + str(load(
    "fused", ["fused.cu"]))


def f(x):
    if x.is_cuda:
        return ext.fused(x,
                         1)
    return x
'''


def test_annotation_above_statement_with_indentation():
    new, marked = annotate(SRC, [manual(12), manual(6, rule="MIG501", msg="CUDA build")], "python")
    assert len(marked) == 2
    lines = new.splitlines()
    # line 6 is inside the multi-line statement that starts on line 4 (and a string).
    assert lines[3] == "# migrate[MIG501]: CUDA build"
    assert lines[4] == 'doc = """'
    i = lines.index("        return ext.fused(x,")
    note = "# migrate[MIG503]: custom CUDA kernel: port it to an Ascend C operator"
    assert lines[i - 1] == "        " + note
    compile(new, "t.py", "exec")


def test_annotate_is_idempotent_and_strippable():
    once, _ = annotate(SRC, [manual(12)], "python")
    twice, marked = annotate(once, [manual(13)], "python")  # same finding, shifted a line
    assert twice == once and marked == []
    stripped, n = strip_annotations(once, "python")
    assert (stripped, n) == (SRC, 1)


def test_only_manual_findings_are_annotated():
    new, marked = annotate(SRC, [manual(12, category="auto")], "python")
    assert new == SRC and marked == []


def test_strip_leaves_lookalikes_in_strings():
    text = 's = """\n# migrate[MIG503]: not a comment\n"""\n# migrate[MIG503]: x\nimport os\n'
    assert strip_annotations(text, "python") == (
        's = """\n# migrate[MIG503]: not a comment\n"""\nimport os\n',
        1,
    )


def test_shell_continuation_and_crlf():
    text = "export X=1\r\ntorchrun --nproc_per_node=8 \\\r\n    train.py\r\n"
    new, _ = annotate(text, [manual(3, msg="check devices")], "shell")
    assert new == (
        "export X=1\r\n# migrate[MIG503]: check devices\r\ntorchrun --nproc_per_node=8 \\\r\n    train.py\r\n"
    )
    assert strip_annotations(new, "shell") == (text, 1)


def test_kinds_without_comments_are_left_alone():
    assert annotate("a: 1\n", [manual(1)], "json") == ("a: 1\n", [])


def test_long_messages_keep_their_first_sentence():
    msg = (
        "`torch.backends.cudnn.benchmark` does nothing on NPU: NPUs have no cuDNN autotuner. "
        "Operator compilation is the nearest knob: torch.npu.set_compile_mode(...)."
    )
    new, _ = annotate(
        "import torch\ntorch.backends.cudnn.benchmark = True\n", [manual(2, rule="MIG401", msg=msg)], "python"
    )
    assert new.splitlines()[1] == (
        "# migrate[MIG401]: `torch.backends.cudnn.benchmark` does nothing on NPU: NPUs have no "
        "cuDNN autotuner. (see `migrate rules MIG401`)"
    )


def test_cuda_sources_get_line_comments_above_macros():
    text = "#define CHECK(x) \\\n  do { x; } while (0)\n__global__ void k() {}\n"
    new, _ = annotate(text, [manual(2, msg="port to Ascend C"), manual(3, msg="kernel")], "cuda")
    assert new == (
        "// migrate[MIG503]: port to Ascend C\n#define CHECK(x) \\\n"
        "  do { x; } while (0)\n// migrate[MIG503]: kernel\n__global__ void k() {}\n"
    )
    assert strip_annotations(new, "cuda") == (text, 2)


def test_whole_file_finding_on_line_one_is_annotated_once():
    text = "#include <cuda_runtime.h>\n__global__ void k() {}\n"
    once, _ = annotate(text, [manual(1, msg="custom CUDA kernel file")], "cuda")
    assert once.startswith("// migrate[MIG503]: custom CUDA kernel file\n#include")
    twice, marked = annotate(once, [manual(1, msg="custom CUDA kernel file")], "cuda")
    assert (twice, marked) == (once, [])


HEREDOC = """#!/bin/sh
cat <<EOF > job.sh
# migrate[MIG503]: the generated script's own line, not an annotation
nvcc kernel.cu -o kernel
EOF
cat <<-'END' | sh
\t# migrate[MIG501]: also data
\tEND
# migrate[MIG503]: a real annotation
nvcc other.cu
echo $((1 << 2)) '<<NOT'
"""
REAL = "# migrate[MIG503]: a real annotation\n"


def test_strip_keeps_here_document_lines_that_look_like_annotations():
    for kind in ("shell", "docker"):
        new, removed = strip_annotations(HEREDOC, kind)
        assert (new, removed) == (HEREDOC.replace(REAL, ""), 1)


def test_a_finding_in_a_here_document_is_annotated_above_its_command():
    bare = HEREDOC.replace(REAL, "")
    new, marked = annotate(bare, [manual(4), manual(9)], "shell")
    assert len(marked) == 2
    lines = new.splitlines()
    assert lines[1].startswith("# migrate[MIG503]: ") and lines[2] == "cat <<EOF > job.sh"
    assert lines[3:6] == bare.splitlines()[2:5]  # the here-document as it was
    again, removed = strip_annotations(new, "shell")
    assert (again, removed) == (bare, 2)
