"""What the emulation leaves in the temporary folder, and only that, is removed after a run.

The emulation's ``TorchFunctionMode`` makes torch import ``torch._dynamo`` on its first op,
and that import makes torch's inductor cache folder (``$TMPDIR/torchinductor_<user>``)
whether or not the program compiles anything: a plain ``python train.py`` would not leave
it. ``InductorCache`` notes, before the program starts, whether that folder exists; after
it ends, a folder the run made is removed if it holds no file (only empty folders, as the
import leaves it). A folder that existed before, one the program filled (``torch.compile``
output), one named by ``TORCHINDUCTOR_CACHE_DIR``, a symlink or another user's is kept.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile


def default_cache_dir(env: dict[str, str]) -> str | None:
    """The inductor cache folder the program's torch will make (torch/_inductor/runtime/
    cache_dir_utils.py), or None when ``TORCHINDUCTOR_CACHE_DIR`` names one."""
    if env.get("TORCHINDUCTOR_CACHE_DIR") is not None:
        return None
    user = next((env[k] for k in ("LOGNAME", "USER", "LNAME", "USERNAME") if env.get(k)), None)
    if user is None:
        try:
            import pwd

            user = pwd.getpwuid(os.getuid()).pw_name
        except (ImportError, KeyError, OSError):
            user = f"uid_{os.getuid()}" if hasattr(os, "getuid") else "unknown_user"
    tmp = env.get("TMPDIR") or tempfile.gettempdir()
    return os.path.join(os.path.abspath(tmp), "torchinductor_" + re.sub(r'[\\/:*?"<>|]', "_", user))


class InductorCache:
    def __init__(self, env: dict[str, str]) -> None:
        self.path = default_cache_dir(env)
        self.existed = self.path is None or os.path.lexists(self.path)

    def clean(self) -> None:
        """Remove the folder if this run made it and it holds no file."""
        if self.existed or self.path is None:
            return
        try:
            st = os.lstat(self.path)
        except OSError:
            return
        if not stat.S_ISDIR(st.st_mode) or (hasattr(os, "getuid") and st.st_uid != os.getuid()):
            return
        for folder, subs, files in os.walk(self.path, topdown=False):
            if files or any(os.path.islink(os.path.join(folder, s)) for s in subs):
                return  # the program's own data (or a link): kept, all of it
            try:
                os.rmdir(folder)
            except OSError:
                return
