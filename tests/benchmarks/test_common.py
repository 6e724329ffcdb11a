"""benchmarks.common: timing helpers and the RESULTS.md row a script records."""

import datetime

from benchmarks import common


def test_record_appends_a_dated_row_to_the_first_table(tmp_path):
    path = tmp_path / "RESULTS.md"
    path.write_text("# R\n\n| date | benchmark | machine, load | figure |\n|---|---|---|---|\n"
                    "| old | `x` | m | 1x |\n\n## Section\n\n| other | table |\n")  # fmt: skip
    row = common.record("python -m benchmarks.x", "1.5x", where="test box", path=path)
    lines = path.read_text().splitlines()
    assert lines[5] == row and lines[4].startswith("| old")
    assert row.startswith(
        f"| {datetime.date.today().isoformat()} | `python -m benchmarks.x` | test box, load "
    )
    assert row.endswith("| 1.5x |") and lines[-1] == "| other | table |"


def test_best_time_and_alternate_call_what_they_time():
    calls = []
    assert common.best_time(lambda x: calls.append(x), lambda i: (i,), repeats=3) >= 0
    assert calls == [1, 2, 3, 4]  # one warm-up, then three timed
    order = []
    out = common.alternate({"a": lambda: order.append("a"), "b": lambda: order.append("b")},
                           rounds=2, repeats=1, load=lambda: 0.5)  # fmt: skip
    assert order == ["a", "b", "a", "b", "b", "a"] and len(out["a"]) == len(out["b"]) == 2
    assert common.ratio_text(1.234) == "ratio 1.23x" and len(common.load()) == 3
