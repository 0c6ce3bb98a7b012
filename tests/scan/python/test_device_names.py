"""Which name a portable rewrite gives the device (migrate/scan/python/device_names.py):
a ``device`` variable only where it is bound on every path that reaches the rewrite."""

from __future__ import annotations

# pytorch/examples imagenet/main.py (before its accelerator change): `device` is bound in
# the mps arm of the chain, the `.cuda()` sits in another arm and `device` only later
IMAGENET = """\
    import torch


    def main_worker(gpu, model, args):
        if args.gpu is not None and torch.cuda.is_available():
            model = model.cuda(args.gpu)
        elif torch.backends.mps.is_available():
            device = torch.device("mps")
            model = model.to(device)
        else:
            model.features = torch.nn.Identity()
            model.cuda()

        if torch.cuda.is_available():
            device = torch.device("cuda")
        else:
            device = torch.device("cpu")
        return model, device
"""


def test_a_device_bound_in_another_arm_of_the_chain_is_not_used(ported, monkeypatch):
    import torch

    out = ported(IMAGENET)
    assert "        model.to(device)\n" not in out
    assert '        model.to("npu" if is_npu_available() else "cuda")\n' in out
    # the port runs the arm the original ran on a GPU host (no `device` bound there yet)
    scope: dict = {}
    exec(compile(out, "t.py", "exec"), scope)
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)

    class Model(torch.nn.Linear):
        def to(self, *args, **kwargs):  # where the model goes: not what is tested
            return self

    model, device = scope["main_worker"](0, Model(2, 2), type("Args", (), {"gpu": None}))
    # the device chain kept its CUDA arm (and gained an NPU one): this GPU host picks CUDA
    assert 'elif is_npu_available():\n        device = torch.device("npu")\n    else:' in out
    assert isinstance(model.features, torch.nn.Identity) and device.type == "cuda"


def test_a_device_every_arm_binds_is_used_after_the_chain(ported):
    out = ported(
        """\
        import torch


        def train(args, model):
            if args.cuda:
                device = torch.device("cuda")
            elif args.mps:
                device = torch.device("mps")
            else:
                device = torch.device("cpu")
            model.cuda()
            for x in args.data:
                x = x.cuda()
            return model
        """
    )
    assert "    model.to(device)\n" in out and "        x = x.to(device)\n" in out


def test_an_arm_that_leaves_does_not_need_to_bind(ported):
    out = ported(
        """\
        import torch


        def train(args, model):
            if args.cuda:
                device = torch.device("cuda")
            else:
                raise SystemExit("needs a GPU")
            return model.cuda()
        """
    )
    assert "    return model.to(device)\n" in out


def test_a_device_bound_only_in_one_arm_is_not_used_after_the_chain(ported):
    out = ported(
        """\
        import torch


        def train(args, model):
            if args.cuda:
                device = torch.device("cuda:0")
            return model.cuda()
        """
    )
    assert "model.to(device)" not in out
    assert 'return model.to("npu" if is_npu_available() else "cuda")\n' in out
