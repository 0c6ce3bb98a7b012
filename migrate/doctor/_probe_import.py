"""Run by `migrate doctor` inside the target interpreter, in a subprocess with a timeout:
``import torch`` (which autoloads torch_npu >= 2.5 through the ``torch.backends`` entry
point), then ``import torch_npu``, then ``torch.npu.is_available()`` and ``device_count()``.
Nothing else: no device is set, no tensor is made. Standard library only, Python 3.8+.

Prints one line ``@@MIGRATE-DOCTOR@@{json}``: how far it got (``stage``), the versions,
whether ``import torch`` alone loaded torch_npu, and the first error (type and message).
A crash (a signal, an abort in a native library) prints nothing: the caller reports the
exit status and the stderr it captured.
"""

import json
import sys

MARK = "@@MIGRATE-DOCTOR@@"


def main():
    res: dict = {
        "stage": "import torch",
        "torch": None,
        "autoloaded": False,
        "torch_npu": None,
        "has_npu": False,
        "available": None,
        "device_count": None,
        "error": None,
    }
    try:
        import torch

        res["torch"] = str(torch.__version__)
        res["autoloaded"] = "torch_npu" in sys.modules
        res["has_npu"] = hasattr(torch, "npu")
        res["stage"] = "import torch_npu"
        import torch_npu

        res["torch_npu"] = str(getattr(torch_npu, "__version__", "") or "")
        res["has_npu"] = hasattr(torch, "npu")
        res["stage"] = "torch.npu.is_available()"
        npu = torch.npu  # type: ignore[attr-defined]  # added by torch_npu
        res["available"] = bool(npu.is_available())
        res["stage"] = "torch.npu.device_count()"
        res["device_count"] = int(npu.device_count())
        res["stage"] = "done"
    except BaseException as exc:  # SystemExit from a library too: report, do not die silently
        chain: list = []
        seen: set = set()
        link: BaseException | None = exc
        while link is not None and id(link) not in seen and len(chain) < 4:
            seen.add(id(link))
            chain.append(f"{type(link).__name__}: {str(link)[:2000]}")
            link = link.__cause__ or link.__context__
        res["error"] = "\n".join(chain)
    sys.stdout.write("\n" + MARK + json.dumps(res) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
