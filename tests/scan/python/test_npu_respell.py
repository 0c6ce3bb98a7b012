"""The NPU spelling of code naming CUDA, token by token (migrate/scan/python/npu_respell.py)."""

from __future__ import annotations

from migrate.scan.python.npu_respell import respelled


def test_a_python_312_fstring_device_token_is_respelled(monkeypatch):
    """From Python 3.12 f"cuda:{i}" tokenizes as FSTRING_START, FSTRING_MIDDLE "cuda:", ..."""
    import tokenize

    from migrate.scan.python import npu_respell

    monkeypatch.setattr(npu_respell, "_FSTRING_START", 1001)
    monkeypatch.setattr(npu_respell, "_FSTRING_MIDDLE", 1002)

    def tok(kind, text):
        return tokenize.TokenInfo(kind, text, (1, 0), (1, len(text)), text)

    tokens = [tok(1001, 'f"'), tok(1002, "cuda:"), tok(tokenize.OP, "{")]
    assert npu_respell.npu_token(tokens, 1, "torch", {}) == "npu:"
    tokens = [tok(1001, 'f"'), tok(1002, "on cuda:"), tok(tokenize.OP, "{")]
    assert npu_respell.npu_token(tokens, 1, "torch", {}) is None


def test_a_message_about_cuda_is_respelled_only_where_words_are_wanted():
    """A copied arm's message names the NPU (timm's assert); a device expression holding a
    string about CUDA has no NPU spelling."""
    code = 'torch.device("cuda:0", torch.cuda.current_device()), "CUDA is on"\n'
    assert respelled(code, "torch", {}) == 'torch.device("npu:0", torch.npu.current_device()), "NPU is on"\n'
    assert respelled(code, "torch", {}, words=False) is None
    assert respelled(code.replace(', "CUDA is on"', ""), "th", {}) is None  # `torch` bound as th
    plain = 'torch.device(f"cuda:{rank}")\n'
    assert respelled(plain, "torch", {}, words=False) == 'torch.device(f"npu:{rank}")\n'
    assert respelled("torch.backends.cudnn.enabled\n", "torch", {}) is None
