"""Real transformers models (tiny configs, random init, no downloads) for the precision tests
and benchmarks, plus honest reduced-precision runs and injected faults.

``build(name)`` returns ``(model, args, kwargs)``; decoders keep their default
``use_cache=True`` so attention layers receive a live ``DynamicCache``.

``hf32()`` emulates Ascend's default HF32 convolution/matmul (and NVIDIA's TF32) on the CPU:
the inputs of every matmul / linear / conv are rounded to a 10-bit mantissa, the sums stay
fp32 - what the hardware does.
"""

from __future__ import annotations

import os
from contextlib import contextmanager

import torch

from migrate.precision.sensitivity.formats import round_mantissa

os.environ.setdefault("HF_HUB_OFFLINE", "1")

MODELS = ("gpt2", "bert", "llama", "t5", "vit", "resnet", "convnext")
# A module each model surely has, for faults: (module path, kind of layer).
FAULT_SITES = {
    "gpt2": "transformer.h.1.mlp.c_fc",
    "bert": "bert.encoder.layer.1.intermediate.dense",
    "llama": "model.layers.1.mlp.up_proj",
    "mixtral": "model.layers.1.self_attn.v_proj",
    "t5": "encoder.block.1.layer.1.DenseReluDense.wi",
    "vit": "vit.layers.1.mlp.fc1",
    "resnet": "resnet.encoder.stages.1.layers.0.layer.1.convolution",
    "convnext": "convnext.encoder.stages.1.layers.0.pwconv1",
}
ATTENTION_SITES = {
    "gpt2": "transformer.h.1.attn",
    "llama": "model.layers.1.self_attn",
    "t5": "decoder.block.1.layer.0.SelfAttention",
    "bert": "bert.encoder.layer.1.attention.self",
    "vit": "vit.layers.1.attention",
}


def _ids(vocab: int, batch: int = 2, seq: int = 12) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(1))


def _pixels(size: int = 32) -> torch.Tensor:
    return torch.randn(2, 3, size, size, generator=torch.Generator().manual_seed(1))


def build(name: str):
    """``(model, args, kwargs)`` of a tiny random-init model, in eval mode, fp32."""
    import transformers as tf

    torch.manual_seed(0)
    small = {"hidden_act": "gelu"}
    if name == "gpt2":
        cfg = tf.GPT2Config(n_layer=3, n_embd=64, n_head=4, vocab_size=256, n_positions=64)
        model, args, kw = tf.GPT2LMHeadModel(cfg), (_ids(256),), {"use_cache": True}
    elif name == "bert":
        cfg = tf.BertConfig(
            num_hidden_layers=3,
            hidden_size=64,
            num_attention_heads=4,
            intermediate_size=128,
            vocab_size=256,
            **small,
        )
        model, args, kw = tf.BertForMaskedLM(cfg), (_ids(256),), {}
    elif name == "llama":
        cfg = tf.LlamaConfig(
            num_hidden_layers=3,
            hidden_size=64,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=128,
            vocab_size=256,
        )
        model, args, kw = tf.LlamaForCausalLM(cfg), (_ids(256),), {"use_cache": True}
    elif name == "t5":
        cfg = tf.T5Config(
            num_layers=2, num_decoder_layers=2, d_model=64, d_ff=128, num_heads=4, d_kv=16, vocab_size=256
        )
        ids = _ids(256)
        model, args, kw = (
            tf.T5ForConditionalGeneration(cfg),
            (ids,),
            {"decoder_input_ids": ids[:, :6], "use_cache": True},
        )
    elif name == "mixtral":  # MoE: bf16/fp16 may route a near-tie token elsewhere
        cfg = tf.MixtralConfig(
            num_hidden_layers=2,
            hidden_size=64,
            num_attention_heads=4,
            num_key_value_heads=2,
            intermediate_size=128,
            vocab_size=256,
            num_local_experts=4,
            num_experts_per_tok=2,
        )
        model, args, kw = tf.MixtralForCausalLM(cfg), (_ids(256, seq=32),), {"use_cache": True}
    elif name == "vit":
        cfg = tf.ViTConfig(
            image_size=32,
            patch_size=8,
            num_hidden_layers=3,
            hidden_size=64,
            num_attention_heads=4,
            intermediate_size=128,
            num_labels=10,
        )
        model, args, kw = tf.ViTForImageClassification(cfg), (_pixels(),), {}
    elif name == "resnet":
        cfg = tf.ResNetConfig(
            embedding_size=16, hidden_sizes=[16, 32, 64], depths=[1, 1, 1], num_labels=10, layer_type="basic"
        )
        model, args, kw = tf.ResNetForImageClassification(cfg), (_pixels(),), {}
    elif name == "convnext":
        cfg = tf.ConvNextConfig(
            hidden_sizes=[16, 32, 64], depths=[1, 1, 1], num_labels=10, image_size=32, num_stages=3
        )
        model, args, kw = tf.ConvNextForImageClassification(cfg), (_pixels(),), {}
    else:
        raise KeyError(name)
    return model.eval(), args, kw


def cast(model, args, kwargs, dtype):
    """The model and its floating inputs in ``dtype`` (an honest low-precision run)."""

    def mv(x):
        return x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x

    return model.to(dtype), tuple(mv(a) for a in args), {k: mv(v) for k, v in kwargs.items()}


def perturb(model, site: str, scale: float, rows: int = 4) -> None:
    """Scale ``rows`` output rows/channels of ``site``'s weight by ``1 + scale`` (a fault)."""
    weight = model.get_submodule(site).weight
    with torch.no_grad():
        if weight.dim() == 2 and type(model.get_submodule(site)).__name__ == "Conv1D":
            weight[:, :rows] *= 1.0 + scale  # GPT-2's Conv1D stores (in, out)
        else:
            weight[:rows] *= 1.0 + scale


def corrupt_output(model, site: str, scale: float, features: int = 8):
    """A kernel fault: ``site``'s first output is scaled by ``1 + scale`` on ``features``
    features (a forward hook registered before any dump, so it is part of the module)."""

    def hook(mod, args, out):
        t = out[0] if isinstance(out, tuple) else out
        with torch.no_grad():
            t[..., :features] *= 1.0 + scale
        return out

    return model.get_submodule(site).register_forward_hook(hook)


_REDUCED = {
    torch.nn.functional.linear,
    torch.nn.functional.conv1d,
    torch.nn.functional.conv2d,
    torch.matmul,
    torch.bmm,
    torch.mm,
    torch.addmm,
    torch.baddbmm,
    torch.Tensor.matmul,
    torch.Tensor.__matmul__,
    torch.nn.functional.scaled_dot_product_attention,
}


class _HF32Mode(torch.overrides.TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _REDUCED:

            def rnd(x):  # straight-through: the forward sees rounded inputs
                if not isinstance(x, torch.Tensor) or x.dtype != torch.float32:
                    return x
                return x + (round_mantissa(x.detach(), 10) - x.detach())

            products = (
                "input",
                "weight",
                "mat1",
                "mat2",
                "batch1",
                "batch2",
                "other",
                "query",
                "key",
                "value",
            )
            kwargs = {k: rnd(v) if k in products else v for k, v in kwargs.items()}
            if func is torch.addmm or func is torch.baddbmm:
                args = (args[0], *map(rnd, args[1:]))  # the added term is not a product
            elif func is torch.nn.functional.scaled_dot_product_attention:
                args = (*map(rnd, args[:3]), *args[3:])
            else:  # linear, conv, matmul: the first two (weight may come by keyword)
                args = tuple(map(rnd, args[:2])) + tuple(args[2:])
        return func(*args, **kwargs)


class _WideMode(torch.overrides.TorchFunctionMode):
    """Matmul/conv computed in float64 and rounded back: an honest fp32 run whose sums are
    ordered and rounded differently, as on another device."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func not in _REDUCED:
            return func(*args, **kwargs)

        def wide(x):
            return x.double() if isinstance(x, torch.Tensor) and x.dtype == torch.float32 else x

        out = func(*map(wide, args), **{k: wide(v) for k, v in kwargs.items()})
        return out.float() if isinstance(out, torch.Tensor) else out


@contextmanager
def other_device():
    """Exact-then-rounded matmul/conv: an fp32 run as another device would make it."""
    with _WideMode():
        yield


HF32_META = {"precision": {"matmul": "hf32", "conv": "hf32", "source": "emulated"}}


@contextmanager
def hf32():
    """Emulated HF32 matmul/conv for the block (dump with ``meta=HF32_META``)."""
    with _HF32Mode():
        yield


def dump_run(out, name: str, mode: str = "fp32", fault=None, kernel_fault=None, **kw):
    """Build ``name``, inject the faults, run it once in ``mode`` (fp32, other, hf32, bf16,
    fp16) under a dump into ``out``; returns (model, args, kwargs)."""
    from migrate.precision.dumper import dump

    model, args, kwargs = build(name)
    if fault:
        perturb(model, FAULT_SITES[name], fault)
    if kernel_fault:
        corrupt_output(model, ATTENTION_SITES[name], kernel_fault)
    if mode in ("bf16", "fp16"):
        model, args, kwargs = cast(model, args, kwargs, torch.bfloat16 if mode == "bf16" else torch.float16)
    ctx = {"hf32": hf32, "other": other_device}.get(mode)
    meta = HF32_META if mode == "hf32" else None
    with torch.no_grad(), dump(model, out, meta=meta, **kw):
        if ctx:
            with ctx():
                model(*args, **kwargs)
        else:
            model(*args, **kwargs)
    return model, args, kwargs
