"""The API as a type checker sees it: mypy --strict on tests/typing/usage.py (a user's code), whose comments
say what each line must give (``# R: type``: reveal_type's type starts with it; ``# E: message``: an error
that says it); no other line may give an error."""
import pathlib
import re

import pytest

api = pytest.importorskip("mypy.api")

USAGE = pathlib.Path(__file__).parent / "typing" / "usage.py"


def test_overloads_and_literals_as_mypy_sees_them():
    stdout, stderr, status = api.run([str(USAGE), "--strict", "--no-error-summary", "--show-absolute-path"])
    found: dict[int, list[str]] = {}
    for line in stdout.splitlines():
        m = re.match(rf"{re.escape(str(USAGE))}:(\d+): (?:note|error): (.*)", line)
        if m:
            found.setdefault(int(m.group(1)), []).append(m.group(2))
    expected_lines = set()
    for n, line in enumerate(USAGE.read_text().splitlines(), 1):
        m = re.search(r"# ([RE]): (.*)$", line)
        if not m:
            continue
        expected_lines.add(n)
        said = found.get(n, [])
        if m.group(1) == "R":
            assert any(s.startswith(f'Revealed type is "{m.group(2)}') for s in said), (n, said)
        else:
            assert any(m.group(2) in s for s in said), (n, said)
    errors = [(n, s) for n, ss in found.items() for s in ss
              if n not in expected_lines and not s.startswith(("Possible overload", "    def"))]
    assert not errors, errors
