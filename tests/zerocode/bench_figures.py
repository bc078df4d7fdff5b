# SPDX-License-Identifier: Apache-2.0
"""The figures of the in-process benchmark (bench_inprocess.py), from its rounds, and the same
figures pooled over the rounds of several runs (its --pairs files):

  /usr/bin/python3 tests/zerocode/bench_figures.py FILE...

A round is {kind of block: [agent CPU ms per request, wall ms per request]}; every kind of
block ran the same requests in it. Throughput is requests over time, so a kind's throughput
against the plain blocks is the ratio of their total wall times, not the median of per-round
ratios (which weighs a round the host slowed as much as any other, and is printed beside it as
the typical round). The 95% intervals resample whole rounds (a round's blocks shared the host's
state of the moment) with a fixed seed, so a file always prints the same figures.
"""
import json
import random
import statistics
import sys

WALL, CPU = 1, 0
DRAWS = 2000


def total(rounds, name, column):
    return sum(r[name][column] for r in rounds)


def total_change(rounds, name, column, base="plain"):
    """The name blocks' total of a column against the base blocks', minus 1."""
    return total(rounds, name, column) / total(rounds, base, column) - 1


def throughput_change(rounds, name, base="plain"):
    """Requests per second of the name blocks against the base blocks, minus 1."""
    return total(rounds, base, WALL) / total(rounds, name, WALL) - 1


def interval(rounds, figure, seed=12):
    """The 95% bootstrap interval of figure(rounds), over resampled rounds."""
    rng = random.Random(seed)
    values = sorted(figure(rng.choices(rounds, k=len(rounds))) for _ in range(DRAWS))
    return values[int(0.025 * DRAWS)], values[int(0.975 * DRAWS) - 1]


def per_round_ratios(rounds, name, column, base="plain"):
    return [r[name][column] / r[base][column] for r in rounds]


def describe(rounds, name, base="plain"):
    """One line: throughput and agent CPU against the base blocks, with their intervals, and
    the typical round's wall-time ratio."""
    tp = throughput_change(rounds, name, base)
    tp_lo, tp_hi = interval(rounds, lambda rs: throughput_change(rs, name, base))
    cpu = total_change(rounds, name, CPU, base)
    cpu_lo, cpu_hi = interval(rounds, lambda rs: total_change(rs, name, CPU, base))
    walls = per_round_ratios(rounds, name, WALL, base)
    q1, median, q3 = statistics.quantiles(walls, n=4) if len(walls) > 1 else walls * 3
    return (f"{name}: throughput {tp * 100:+.1f}% (95% interval {tp_lo * 100:+.1f}%.."
            f"{tp_hi * 100:+.1f}%), agent CPU per request {cpu * 100:+.1f}% ({cpu_lo * 100:+.1f}%.."
            f"{cpu_hi * 100:+.1f}%); per-round wall-time ratio median {median:.4f} (quartiles "
            f"{q1:.3f}..{q3:.3f})")


def load(paths):
    rounds = []
    for path in paths:
        with open(path) as f:
            for number, line in enumerate(f, 1):
                try:
                    row = json.loads(line)
                    if not all(len(v) == 2 and v[0] > 0 and v[1] > 0 for v in row.values()):
                        raise ValueError("each kind needs [cpu_ms, wall_ms], both positive")
                except (ValueError, TypeError, AttributeError) as e:
                    sys.exit(f"bench_figures: {path}:{number}: not a round: {e}")
                rounds.append(row)
    return rounds


def main(paths):
    if not paths:
        sys.exit("usage: bench_figures.py FILE... (bench_inprocess.py --pairs files)")
    rounds = load(paths)
    if not rounds or "plain" not in rounds[0]:
        sys.exit("bench_figures: no rounds with plain blocks")
    names = [n for n in rounds[0] if n != "plain"]
    if any(set(r) != set(rounds[0]) for r in rounds):
        sys.exit("bench_figures: the files mix rounds of different kinds of block")
    print(f"{len(rounds)} rounds from {len(paths)} file(s); against the plain blocks:")
    for name in names:
        print("  " + describe(rounds, name))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
