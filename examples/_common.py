"""A helper shared by the examples that print a table (not an example itself).

The examples run as scripts (``python examples/NAME.py`` from any directory), so Python puts
this folder on ``sys.path`` and they import it as ``_common``.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Callable
from pathlib import Path


def tee_to_out(main: Callable[[], object], name: str) -> Path:
    """Run ``main()``, print what it printed and also keep it as ``examples/out/NAME.txt``.

    Returns the path written. Example::

        tee_to_out(lambda: print("hello"), "hello")  # prints hello; writes out/hello.txt
    """
    table = io.StringIO()
    with contextlib.redirect_stdout(table):
        main()
    print(table.getvalue(), end="")
    out = Path(__file__).resolve().parent / "out"
    out.mkdir(exist_ok=True)
    path = out / f"{name}.txt"
    path.write_text(table.getvalue())
    print(f"wrote {path}")
    return path
