# SPDX-License-Identifier: Apache-2.0
"""The benchmark's figures (bench_figures.py): throughput is requests over total time, the
intervals repeat for a file, and a bad --pairs line is refused with its place. No root."""
import contextlib
import io
import json
import os
import statistics
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_figures as bf  # noqa: E402


def rounds_of(walls):
    """Rounds from (plain wall, instrumented wall) pairs, CPU at half the wall time."""
    return [{"plain": [p / 2, p], "instrumented": [i / 2, i]} for p, i in walls]


class BenchFiguresTest(unittest.TestCase):
    def test_throughput_is_requests_over_total_time_not_the_median_round(self):
        # One slow round (plain 10 ms, instrumented 20 ms a request) among three where the
        # instrumented blocks are 1% faster: the median round says faster, the totals slower.
        rounds = rounds_of([(10, 9.9), (10, 9.9), (10, 20), (10, 9.9)])
        self.assertAlmostEqual(bf.throughput_change(rounds, "instrumented"), 40 / 49.7 - 1)
        self.assertAlmostEqual(bf.total_change(rounds, "instrumented", bf.CPU), 49.7 / 40 - 1)
        self.assertLess(statistics.median(bf.per_round_ratios(rounds, "instrumented", bf.WALL)), 1)

    def test_interval_holds_the_figure_and_repeats(self):
        rounds = rounds_of([(10, 10 + (i % 7) * 0.1) for i in range(60)])
        figure = lambda rs: bf.throughput_change(rs, "instrumented")  # noqa: E731
        lo, hi = bf.interval(rounds, figure)
        self.assertLessEqual(lo, figure(rounds))
        self.assertGreaterEqual(hi, figure(rounds))
        self.assertLess(lo, hi)
        self.assertEqual((lo, hi), bf.interval(rounds, figure))

    def test_pooled_files_print_every_kind(self):
        with tempfile.TemporaryDirectory() as d:
            paths = []
            for n in range(2):
                paths.append(os.path.join(d, f"run{n}.jsonl"))
                with open(paths[-1], "w") as f:
                    for r in rounds_of([(10, 10.5), (11, 11.2)]):
                        r["beside"] = [5, 10]
                        f.write(json.dumps(r) + "\n")
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                self.assertEqual(bf.main(paths), 0)
        text = out.getvalue()
        self.assertIn("4 rounds from 2 file(s)", text)
        self.assertIn("instrumented: throughput -3.2%", text)
        self.assertIn("beside: throughput +5.0%", text)

    def test_bad_lines_are_refused_with_their_place(self):
        bad = ['{"plain": [1, 2], "instrumented": [1]}', '{"plain": [1, 2], "x": [0, 1]}',
               'not json', '[1, 2]', '{"plain": "ab"}']
        with tempfile.TemporaryDirectory() as d:
            for text in bad:
                path = os.path.join(d, "p.jsonl")
                with open(path, "w") as f:
                    f.write('{"plain": [1, 2], "instrumented": [1, 2]}\n' + text + "\n")
                with self.assertRaises(SystemExit) as e:
                    bf.load([path])
                self.assertIn("p.jsonl:2: not a round", str(e.exception), text)

    def test_mixed_kinds_and_no_files_are_refused(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "p.jsonl")
            with open(path, "w") as f:
                f.write('{"plain": [1, 2], "instrumented": [1, 2]}\n'
                        '{"plain": [1, 2], "beside": [1, 2]}\n')
            with self.assertRaises(SystemExit) as e:
                bf.main([path])
            self.assertIn("mix rounds", str(e.exception))
        with self.assertRaises(SystemExit) as e:
            bf.main([])
        self.assertIn("usage", str(e.exception))


if __name__ == "__main__":
    unittest.main()
