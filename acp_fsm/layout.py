"""Where the layers are: the repository's top-level `fsm/`, `protocol/`, `providers/` and
`schemas/` are the packages `acp_fsm.fsm`, ... (setuptools' `package-dir` mapping puts them
there in the wheel), and have no other name (docs/architecture.md, "Layers").

Installed from a wheel they are folders inside `acp_fsm/` and nothing here is needed. Run from a
source tree (a checkout, the unpacked sdist, another checkout that a benchmark compares) they
are folders beside it: `install` adds a finder that looks for exactly those four names there,
first, so a checkout's own layers are the ones its `acp_fsm` gets.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec, PathFinder
from types import ModuleType

LAYERS = ("fsm", "protocol", "providers", "schemas")
PACKAGE = "acp_fsm"


class SourceLayers:
    """A meta path finder of `acp_fsm.<layer>` in the folder that holds `acp_fsm/`."""

    def __init__(self, root: str) -> None:
        self.root = root

    def __repr__(self) -> str:
        return f"<SourceLayers {self.root}>"

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        package, _, layer = fullname.partition(".")
        if package != PACKAGE or layer not in LAYERS:
            return None
        return PathFinder.find_spec(fullname, [self.root])


def install(package_dir: str) -> None:
    """Find the layers beside `package_dir` when they are not inside it (once a process)."""
    if os.path.isdir(os.path.join(package_dir, LAYERS[0])):
        return  # installed: the layers are subpackages like any other
    root = os.path.dirname(package_dir)
    if not os.path.isfile(os.path.join(root, LAYERS[0], "__init__.py")):
        return  # neither: the import of a layer fails as it would
    if not any(isinstance(finder, SourceLayers) for finder in sys.meta_path):
        sys.meta_path.insert(0, SourceLayers(root))
