"""Thirteen more real architectures (transformers tiny configs, random init, no downloads)
for the precision sweeps: decoders with SwiGLU / soft-capped / min-value-masked attention,
encoders, vision, audio and state-space models. ``build(name)`` returns
``(model, args, kwargs)`` in eval mode, fp32; ``main_output(out)`` the tensor a loss is
taken from. (timm needs torchvision, which cannot sit beside the CPU torch wheel here, so
the vision models are transformers' EfficientNet, RegNet, DeiT and MobileNetV2.)"""

from __future__ import annotations

import os

import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")

ZOO = (
    "qwen3",
    "gemma2",
    "phi3",
    "deberta",
    "clip",
    "wav2vec2",
    "mamba",
    "rwkv",
    "efficientnet",
    "regnet",
    "deit",
    "mobilenet",
    "bert_min",
)


def _ids(vocab: int = 256, batch: int = 2, seq: int = 12) -> torch.Tensor:
    return torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(1))


def _pixels(size: int = 32, channels: int = 3) -> torch.Tensor:
    return torch.randn(2, channels, size, size, generator=torch.Generator().manual_seed(1))


_DEC = dict(
    num_hidden_layers=2,
    hidden_size=64,
    num_attention_heads=4,
    num_key_value_heads=2,
    intermediate_size=128,
    vocab_size=256,
)


def _decoders(name: str, tf):
    if name == "qwen3":
        return tf.Qwen3ForCausalLM(tf.Qwen3Config(**_DEC, head_dim=16)), (_ids(),), {"use_cache": True}
    if name == "gemma2":  # sliding window + soft-capping, eager attention with a min mask
        cfg = tf.Gemma2Config(**_DEC, head_dim=16, sliding_window=8, attn_implementation="eager")
        mask = torch.ones(2, 12, dtype=torch.long)
        mask[1, :3] = 0  # left padding: min-value entries in the additive mask
        return tf.Gemma2ForCausalLM(cfg), (_ids(),), {"attention_mask": mask, "use_cache": True}
    if name == "phi3":
        cfg = tf.Phi3Config(**_DEC, pad_token_id=0)
        return tf.Phi3ForCausalLM(cfg), (_ids(),), {"use_cache": True}
    if name == "mamba":
        cfg = tf.MambaConfig(
            num_hidden_layers=2, hidden_size=32, state_size=8, vocab_size=256, expand=2, conv_kernel=4
        )
        return tf.MambaForCausalLM(cfg), (_ids(),), {"use_cache": False}
    if name == "rwkv":
        cfg = tf.RwkvConfig(
            num_hidden_layers=2,
            hidden_size=32,
            attention_hidden_size=32,
            intermediate_size=64,
            vocab_size=256,
            context_length=16,
        )
        return tf.RwkvForCausalLM(cfg), (_ids(),), {"use_cache": False}
    return None


def _encoders(name: str, tf):
    enc = dict(num_hidden_layers=2, hidden_size=64, num_attention_heads=4, intermediate_size=128)
    if name == "deberta":
        cfg = tf.DebertaV2Config(
            **enc,
            vocab_size=256,
            relative_attention=True,
            pos_att_type=["p2c", "c2p"],
            max_relative_positions=16,
        )
        return tf.DebertaV2ForMaskedLM(cfg), (_ids(),), {}
    if name == "bert_min":  # padded batch: BERT's additive mask holds dtype-min values
        cfg = tf.BertConfig(**enc, vocab_size=256, attn_implementation="eager")
        mask = torch.ones(2, 12, dtype=torch.long)
        mask[0, 8:] = 0
        return tf.BertModel(cfg), (_ids(),), {"attention_mask": mask}
    if name == "clip":
        cfg = tf.CLIPConfig(
            text_config=dict(enc, vocab_size=256, max_position_embeddings=16),
            vision_config=dict(enc, image_size=32, patch_size=8),
            projection_dim=32,
        )
        return tf.CLIPModel(cfg), (), {"input_ids": _ids(), "pixel_values": _pixels()}
    if name == "wav2vec2":
        cfg = tf.Wav2Vec2Config(
            **enc,
            conv_dim=(16, 16),
            conv_stride=(5, 4),
            conv_kernel=(10, 4),
            num_feat_extract_layers=2,
            num_conv_pos_embeddings=16,
            num_conv_pos_embedding_groups=4,
            vocab_size=32,
            mask_time_prob=0.0,
            layerdrop=0.0,
        )
        wave = torch.randn(2, 800, generator=torch.Generator().manual_seed(1))
        return tf.Wav2Vec2ForCTC(cfg), (wave,), {}
    return None


def _vision(name: str, tf):
    if name == "efficientnet":
        cfg = tf.EfficientNetConfig(
            image_size=32, width_coefficient=0.25, depth_coefficient=0.25, hidden_dim=320, num_labels=10
        )
        return tf.EfficientNetForImageClassification(cfg), (_pixels(),), {}
    if name == "regnet":
        cfg = tf.RegNetConfig(
            embedding_size=16, hidden_sizes=[16, 32], depths=[1, 1], groups_width=8, num_labels=10
        )
        return tf.RegNetForImageClassification(cfg), (_pixels(),), {}
    if name == "deit":
        cfg = tf.DeiTConfig(
            image_size=32,
            patch_size=8,
            num_hidden_layers=2,
            hidden_size=64,
            num_attention_heads=4,
            intermediate_size=128,
            num_labels=10,
        )
        return tf.DeiTForImageClassification(cfg), (_pixels(),), {}
    if name == "mobilenet":
        cfg = tf.MobileNetV2Config(image_size=32, depth_multiplier=0.35, num_labels=10)
        return tf.MobileNetV2ForImageClassification(cfg), (_pixels(),), {}
    return None


def build(name: str):
    import transformers as tf

    torch.manual_seed(0)
    for family in (_decoders, _encoders, _vision):
        made = family(name, tf)
        if made is not None:
            model, args, kwargs = made
            return model.eval(), args, kwargs
    raise KeyError(name)


def main_output(out):
    """The tensor a loss is taken from: logits, else the first floating tensor."""
    for key in ("logits", "logits_per_image", "last_hidden_state"):
        value = getattr(out, key, None) if not isinstance(out, dict) else out.get(key)
        if isinstance(value, torch.Tensor):
            return value
    from migrate.precision.flatten import iter_tensors

    return next(t for _, t in iter_tensors(out) if t.is_floating_point())
