"""docs/porting.md, the porting table from PyTorch and JAX: its examples run as a doctest."""
from __future__ import annotations

import doctest
from pathlib import Path


def test_porting_page_examples_run():
    page = Path(__file__).resolve().parent.parent / "docs" / "porting.md"
    result = doctest.testfile(str(page), module_relative=False,
                              optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 20 and result.failed == 0, result
