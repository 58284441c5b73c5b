"""Benchmark of the scope engine: one overlap decision, and one claim against many locks.

Run as ``python bench/scope_bench.py``. Prints medians in microseconds. The live scopes
are a seeded mix: module subtrees, per-package globs, exact files, and 1.5% wildcard
patterns at the top level that every query consults. The "**/..." ones among them
overlap every non-exact scope (rule 4), so a query's answer grows with N there; a real
store could not hold them next to the others, since claims that overlap are refused, so
a second run admits only scopes that overlap none already live, as a store would.
"""

from __future__ import annotations

import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gitlocks.core.scope import ScopeEntry, ScopeIndex, pattern_covers, patterns_overlap

PAIRS = [
    ("src/api/**", "src/web/**"),
    ("src/**/api", "src/api"),
    ("src/*.py", "src/a*"),
    ("packages/ui/src/*.ts", "packages/*/src/button.ts"),
    ("**/*.test.ts", "packages/ui/src/*.ts"),
    ("docs/guide.md", "docs/*.md"),
]
SIZES = (100, 1_000, 10_000)
QUERIES = 300


def decision_median_ns(a: str, b: str, loops: int = 2_000, rounds: int = 25) -> float:
    patterns_overlap(a, b)  # compile and fill the caches
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for _ in range(loops):
            patterns_overlap(a, b)
        samples.append((time.perf_counter_ns() - start) / loops)
    return statistics.median(samples)


def random_scope(rng: random.Random) -> ScopeEntry:
    """One scope from the mix. Module, package and file names come from large pools, so
    they rarely repeat; the wildcard conventions at the top level come from small ones."""
    roll = rng.random()
    module = f"mod{rng.randrange(50_000)}"
    if roll < 0.40:
        return ScopeEntry(f"src/{module}/**")
    if roll < 0.65:
        return ScopeEntry(f"packages/pkg{rng.randrange(20_000)}/src/*.ts")
    if roll < 0.85:
        return ScopeEntry(f"docs/{module}.md", exact=True)
    if roll < 0.95:
        return ScopeEntry(f"services/svc{rng.randrange(5_000)}/{module}/handler.go", exact=True)
    if roll < 0.985:
        return ScopeEntry(f"tests/{module}/**/*.test.ts")
    if roll < 0.995:  # 1%: bucket patterns that reach the whole tree
        return ScopeEntry(rng.choice(["**/*.test.ts", "**/fixtures/**", "**/*.snap"]))
    return ScopeEntry(rng.choice(["*.md", "*.config.js", "[A-Z]*.txt", ".*rc"]))  # 0.5%


def check_times_ns(size: int, rng: random.Random, *, disjoint: bool) -> tuple[list[int], float]:
    """Times of ``overlapping`` for fresh scopes, and the mean number of overlaps found.

    ``disjoint`` builds the live set as a store would hold it: a scope is admitted only
    if it overlaps none already live (claims that overlap are refused).
    """
    index = ScopeIndex()
    while len(index) < size:
        scope = random_scope(rng)
        if disjoint and (scope.pattern.startswith("**") or index.overlapping(scope)):
            continue  # a "**/..." scope would shut out every later non-exact one
        index.add((str(len(index)), scope.pattern), scope)
    queries = [random_scope(rng) for _ in range(QUERIES)]
    hits = [len(index.overlapping(query)) for query in queries]  # compiles each query once
    samples = []
    for _ in range(5):
        for query in queries:
            start = time.perf_counter_ns()
            index.overlapping(query)
            samples.append(time.perf_counter_ns() - start)
    return samples, statistics.mean(hits)


def report_checks(title: str, *, disjoint: bool) -> None:
    rng = random.Random(20240601)
    medians = {}
    print(f"{title}, over {QUERIES} fresh queries x 5:")
    for size in SIZES:
        samples, hits = check_times_ns(size, rng, disjoint=disjoint)
        medians[size] = statistics.median(samples)
        p95 = statistics.quantiles(samples, n=20)[-1]
        print(
            f"  N={size:>6}: median {medians[size] / 1000:7.2f} us   p95 {p95 / 1000:8.2f} us"
            f"   (mean overlaps found: {hits:.1f})"
        )
    ratio = medians[SIZES[-1]] / medians[SIZES[0]]
    print(f"  ratio of medians N={SIZES[-1]} / N={SIZES[0]}: {ratio:.2f}")


# Patterns a backtracking matcher takes exponential time on (8 s once, for the first).
PATHOLOGICAL = [
    ("*a" * 14 + "*b", "a" * 30),
    ("*a*a*a*a*a*a*a*a*a*a*a*a*a*a*b", "a" * 36),
    ("**/" * 20 + "x", "/".join(["a"] * 200)),
]


def pathological_median_us(pattern: str, path: str, runs: int = 200) -> float:
    """One coverage decision on a fresh path each run (no cache can answer it)."""
    times = []
    for i in range(runs):
        target = f"{path}{i % 7}" if i else path
        start = time.perf_counter_ns()
        pattern_covers(pattern, target)
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1000


def main() -> None:
    print("one overlap decision (compiled and cached), median:")
    for a, b in PAIRS:
        print(f"  {a!r:28} vs {b!r:30} {decision_median_ns(a, b) / 1000:7.2f} us")
    print("pathological patterns, one coverage decision each, median:")
    for pattern, path in PATHOLOGICAL:
        shown = pattern if len(pattern) <= 32 else pattern[:29] + "..."
        took = pathological_median_us(pattern, path)
        print(f"  {shown!r:34} on {len(path):3}-char path {took:8.1f} us")
    pair = ("*a" * 14 + "*b", "*a" * 30 + "c")
    print(f"  overlap of two such patterns: {decision_median_ns(*pair) / 1000:.1f} us")
    report_checks("one new scope against N live scopes (the mix as drawn)", disjoint=False)
    report_checks("one new scope against N pairwise disjoint live scopes", disjoint=True)


if __name__ == "__main__":
    main()
