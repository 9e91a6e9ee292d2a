"""The command line as a new user meets it (``python -m dmlgpu ...``, issue 49): plain help texts whose descriptions
end where their sentences do, help for every option, one spelling of --repeats, usage errors and missing devices as
one line and an exit status (2, 1) instead of a traceback, a progress line per row of ``bench reductions``, "-" for
"vs none" where the plain scatter did not run, exact workload names, and the clock hold named where devices are
listed. The benches run at tiny sizes (their own tests: tests/test_bench.py)."""
import argparse
import dataclasses
import re

import pytest

import dmlgpu
from dmlgpu.__main__ import main
from dmlgpu.bench import reductions
from dmlgpu.bench.workloads import select
from dmlgpu.runtime import clocks

COMMANDS = [[], ["bench"], ["bench", "reductions"], ["bench", "roundtrip"], ["bench", "large"], ["bench", "apps"]]


def _parser(argv, monkeypatch, capsys):
    """(the parser that ``python -m dmlgpu ARGV --help`` uses, the help it printed)."""
    seen = []
    parse = argparse.ArgumentParser.parse_args
    monkeypatch.setattr(argparse.ArgumentParser, "parse_args", lambda self, *a, **k: seen.append(self) or
                        parse(self, *a, **k))
    with pytest.raises(SystemExit) as info:
        main([*argv, "--help"])
    assert info.value.code == 0
    return seen[0], capsys.readouterr().out


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda a: " ".join(a) or "dmlgpu")
def test_help_is_plain_text_with_whole_sentences_and_every_option_helped(argv, monkeypatch, capsys):
    ap, text = _parser(argv, monkeypatch, capsys)
    assert "``" not in text and "::" not in text, text          # no reStructuredText
    description = ap.description.rstrip()
    assert description[-1] in ".:)", description                # its first paragraph, whole (not its first line)
    assert description in text
    parsers = [ap] + [p for a in ap._actions if isinstance(a, argparse._SubParsersAction) for p in a.choices.values()]
    for p in parsers:
        for action in p._actions:
            if action.option_strings and not isinstance(action, argparse._HelpAction):
                assert action.help, f"{' '.join(argv)} {action.option_strings}: no help"


def test_repeats_is_spelled_one_way_and_repeat_still_works(monkeypatch, capsys):
    for argv in COMMANDS[2:]:
        ap, text = _parser(argv, monkeypatch, capsys)
        assert "--repeats" in text and not re.search(r"--repeat\b(?!s)", text), argv
        monkeypatch.undo()
    ap = reductions.parser()
    assert ap.parse_args(["--repeat", "3"]).repeats == 3 and ap.parse_args([]).repeats == 5   # (a hidden alias)


@pytest.mark.parametrize("argv, says", [
    (["bench", "reductions", "--dist", "bogus"], "argument --dist: invalid choice: 'bogus' (choose from uniform, zipf, "
                                                 "one)"),
    (["bench", "reductions", "--dtype", "float32,floaty"], "argument --dtype: invalid value 'floaty'"),
    (["bench", "reductions", "--reductions", "add,avg"], "argument --reductions: invalid choice: 'avg'"),
    (["bench", "reductions", "--updates", "lots"], "argument --updates: 'LOTS' is no count"),
    (["bench", "reductions", "--device", "99", "--updates", "8"], "--device 99: "),
    (["bench", "large", "--sections", "rows,nope"], "--sections: unknown nope"),
    (["bench", "--device", "99", "--sizes", "4K", "--workloads", "gather-middle", "--no-latency"], "--device 99: "),
    (["bench", "roundtrip", "--device", "99"], "--device 99: "),
    (["bench", "apps", "--device", "99", "--workloads", "embedding*"], "--device 99: "),
    (["warmup", "--device", "99"], None),
])
def test_usage_errors_are_a_line_and_status_2(argv, says, capsys):
    try:
        status = main(argv)
    except SystemExit as e:
        status = e.code
    err = capsys.readouterr().err
    assert status == 2, err
    assert "Traceback" not in err
    message = [line for line in err.splitlines() if not line.startswith(("usage:", " "))]
    assert len(message) == 1, err
    if says:
        assert says in message[0], err


def test_a_missing_default_device_is_a_line_and_status_1(monkeypatch, capsys):
    monkeypatch.setenv("DMLGPU_DEVICE", "5")
    assert main(["info"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("python -m dmlgpu: DMLGPU_DEVICE (5) must be a device index"), err


def test_reductions_progress_and_vs_none(capsys):
    """A progress line per row on stderr; "vs none" is "-" where the plain scatter did not run (and 1.00x for
    itself, which runs first wherever it is listed)."""
    small = ["--updates", "256", "--targets", "32", "--dtype", "float32", "--dist", "uniform,one", "--repeats", "1",
             "--no-peer"]
    assert reductions.main([*small, "--reductions", "add,max"]) == 0
    out, err = capsys.readouterr()
    rows = [line for line in out.splitlines() if line.startswith("float32")]
    assert len(rows) == 4 and all(line.split()[-1] == "-" for line in rows), out
    steps = re.findall(r"^\[(\d)/4\] .* float32 (uniform|one) (add|max)$", err, re.M)
    assert [s[0] for s in steps] == ["1", "2", "3", "4"], err
    assert reductions.main([*small, "--dist", "one", "--reductions", "max,none"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines() if line.startswith("float32")]
    assert [r[2] for r in rows] == ["none", "max"] and rows[0][-1] == "1.00x" and rows[1][-1].endswith("x")
    assert all(len(line) <= reductions.WIDTH for line in capsys.readouterr().out.splitlines())


def test_workload_names_are_exact_and_prefixes_say_what_they_chose():
    told = []
    assert [w.name for w in select(["scatter_nd-rows"], chose=lambda *a: told.append(a))] == ["scatter_nd-rows"]
    assert told == []
    names = [w.name for w in select(["scatter_nd"], chose=lambda *a: told.append(a))]
    assert names == ["scatter_nd-rows", "scatter_nd-rows-i32", "scatter_nd-rows-unique"]
    assert told == [("scatter_nd", names)]


def test_bench_says_what_a_prefix_chose(tmp_path, capsys):
    assert main(["bench", "--workloads", "gather_nd", "--sizes", "4K", "--no-latency", "--peer", "numpy",
                 "--repeats", "2", "--quiet", "--out", str(tmp_path)]) == 0
    assert "--workloads gather_nd: no workload has this name; it chose gather_nd-pairs, gather_nd-batch" in \
        capsys.readouterr().err


def test_info_names_the_clock_hold_on_nvidia(monkeypatch, capsys):
    from dmlgpu import runtime
    listed = runtime.devices()
    monkeypatch.setattr(runtime, "devices", lambda: [dataclasses.replace(d, vendor_id=clocks.NVIDIA) for d in listed])
    monkeypatch.delenv("DMLGPU_HOLD_CLOCKS", raising=False)
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "clock hold: an open Device keeps this NVIDIA GPU at its working clocks" in out
    assert "about 520 MiB" in out and "DMLGPU_HOLD_CLOCKS=0" in out and "hold_clocks=False" in out
    monkeypatch.setenv("DMLGPU_HOLD_CLOCKS", "0")
    assert main(["info"]) == 0
    assert "clock hold: off (DMLGPU_HOLD_CLOCKS=0)" in capsys.readouterr().out
    monkeypatch.undo()
    assert main(["info"]) == 0
    assert ("clock hold" in capsys.readouterr().out) == any(d.vendor_id == clocks.NVIDIA for d in dmlgpu.devices())
    assert "520 MiB" in dmlgpu.Device.__doc__ and "DMLGPU_HOLD_CLOCKS=0" in dmlgpu.Device.__doc__
