"""`migrate apply` as one transaction: every outcome is made first, nothing written; then
the device helper modules the rewritten files import are written, and only then the
rewritten files, one by one, each atomically (core/fileio.py).

So an interrupted run (Ctrl-C, SIGTERM, SIGKILL, a crash) leaves either the tree as it was
or a tree in which every rewritten file's imports exist: a file that says ``from ._device
import get_device_type`` is written only after ``_device.py`` holds that helper. Files not
yet rewritten still hold their old text, which a second run rewrites (it finds the helper
module as the package's own, with every helper the first run meant to add).

A file whose helper module could not be written is not rewritten (an error entry). A file
that changed between the two phases is rewritten again from what it holds (commit_file);
helpers its new text needs beyond those already written are added before it is written.

Test hook: with ``MIGRATE_TEST_KILL_AFTER_WRITES=N`` in the environment, the run sends
itself SIGKILL just before it would write its (N+1)-th file (helper modules included), so a
test can interrupt it at every point deterministically. Unset (or not a number): no effect.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Callable, Sequence

from migrate.fix import helper_module
from migrate.fix.rewrite import Outcome

KILL_HOOK = "MIGRATE_TEST_KILL_AFTER_WRITES"

CommitFn = Callable[[int, Outcome, Callable[[Outcome], str | None]], Outcome]


class _Writes:
    """Counts the files written; the test hook's kill."""

    def __init__(self) -> None:
        value = os.environ.get(KILL_HOOK, "")
        self.left: int | None = int(value) if value.isascii() and value.isdigit() else None

    def before(self) -> None:
        if self.left is not None and self.left <= 0:
            os.kill(os.getpid(), signal.SIGKILL)

    def after(self, out: Outcome | None) -> None:
        if self.left is not None and out is not None and out.written:
            self.left -= 1


class _Helpers:
    """The helper modules written so far: the names each provides, or why it is missing."""

    def __init__(self, project, writes: _Writes) -> None:
        self.project, self.writes = project, writes
        self.provided: dict[str, set[str]] = {}  # add_path -> helper names it now defines
        self.failed: dict[str, str] = {}  # add_path -> error
        self.outcomes: list[Outcome] = []

    def write(self, outcomes: Sequence[Outcome]) -> None:
        """Create (or extend) every helper module ``outcomes`` import from."""
        for rel, (path, module, type_from, names) in sorted(
            helper_module.needed(outcomes, self.project).items()
        ):
            have = self.provided.get(rel)
            if rel in self.failed or (have is not None and set(names) <= have):
                continue
            self.writes.before()
            out = helper_module.create(path, rel, True, type_from, names)
            self.writes.after(out)
            if out is not None:
                self.outcomes.append(out)
                if out.error:
                    self.failed[rel] = (
                        f"not written: it imports {module}, which could not be written ({out.error})"
                    )
                    continue
            self.provided[rel] = (have or set()) | set(names)

    def ready(self, out: Outcome) -> str | None:
        """None when the helpers ``out`` imports exist (written now if they must be), else why not."""
        self.write([out])
        for rel in helper_module.needed([out], self.project):
            if rel in self.failed:
                return self.failed[rel]
        return None


def commit_all(outcomes: list[Outcome], project, commit: CommitFn) -> tuple[list[Outcome], list[Outcome]]:
    """Write the changed ``outcomes`` (made without writing), helper modules first:
    (the outcomes as written, the helper modules' outcomes)."""
    writes = _Writes()
    helpers = _Helpers(project, writes)
    helpers.write(outcomes)
    done = []
    for i, out in enumerate(outcomes):
        if out.changed:
            writes.before()
            out = commit(i, out, helpers.ready)
            writes.after(out)
        done.append(out)
    return done, helpers.outcomes
