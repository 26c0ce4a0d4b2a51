#!/usr/bin/env python3
"""`make test`: builds every test target once, then runs the suites in two lanes side by side (the
slow end-to-end suites, each with its own emulators, beside the rest, which share the emulator
infra/scripts/with-moto.sh started), and prints what each suite took.

    infra/scripts/with-moto.sh tests/scripts/suites.py [SUITE ...]   # what `make test` runs
    tests/scripts/suites.py --list                                     # the suites, no run

A suite is the unit tests of every library, one crate's integration binary, or one module of the
two binaries that span crates (tests/integration, tests/e2e): those run module by module, each
module's tests named exactly (a filter is a substring, and `reactions::` would also match
`admin::reactions::`). A test target that no suite names (a new crate's binary, a bin with
tests) stops the run before anything runs, so nothing is skipped silently. cargo's own output is
passed through (`.ci/run` sums its `test result:` lines).
"""
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

# (suite name, cargo arguments): whole binaries, run as they are. Every command selects the whole
# workspace (`--workspace --test NAME`, not `-p PACKAGE`): cargo unifies features over the
# packages selected, and a `-p` run would build the dependencies again with other features.
WHOLE = [
    ("unit", ["--workspace", "--lib"]),
    ("bench", ["--workspace", "--bin", "likes-bench"]),
    ("benches (test mode)", ["--workspace", "--bench", "*"]),
    ("auth", ["--workspace", "--test", "auth"]),
    ("admin", ["--workspace", "--test", "admin"]),
    ("api", ["--workspace", "--test", "api"]),
    ("aggregator", ["--workspace", "--test", "aggregator"]),
    ("events", ["--workspace", "--test", "events"]),
    ("worker", ["--workspace", "--test", "worker"]),
]
# Binaries that span crates: one suite per top-level module.
BY_MODULE = [
    ("integration", ["--workspace", "--test", "integration"]),
    ("e2e", ["--workspace", "--test", "e2e"]),
]
# Not cargo's: the spec-driven HTTP fuzz of the local stack, last.
COMMANDS = [("api-fuzz", ["tests/scripts/api-fuzz.sh"])]
# The slowest suites, each with emulators of its own: run in a second lane beside the rest
# (`LIKES_TEST_LANES=1` runs everything in one, one suite at a time). `e2e::roles` (its three
# stacks mostly wait) moved here when the first lane had become the longer by ~100 s.
SECOND_LANE = {"e2e::chaos", "e2e::admin", "e2e::browser", "e2e::roles", "api-fuzz"}


def listed(args):
    """Every test of the selection, by full name (`--list --format terse`: `name: test`)."""
    cmd = ["cargo", "test", "--quiet", *args, "--", "--list", "--format", "terse"]
    out = subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return [line[: -len(": test")] for line in out.splitlines() if line.endswith(": test")]


def uncovered():
    """Test targets of the workspace that no suite runs."""
    meta = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=ROOT,
                          check=True, capture_output=True, text=True).stdout
    covered = {a[2] for _, a in WHOLE + BY_MODULE if "--test" in a or "--bin" in a}
    missing = []
    for package in json.loads(meta)["packages"]:
        for target in package["targets"]:
            kinds = set(target["kind"])
            name = (package["name"], target["name"])
            if "test" in kinds and name[1] not in covered:
                missing.append(f"{name[0]} --test {name[1]}")
            elif "bin" in kinds and target.get("test", True) and name[1] not in covered:
                missing.append(f"{name[0]} --bin {name[1]} (set `test = false`, or add a suite)")
            elif "bench" in kinds and package["name"] != "likes-bench":
                missing.append(f"{name[0]} --bench {name[1]}")
    return missing


def suites():
    """(name, command, how many tests it runs or None): every suite, in run order."""
    out = []
    for name, args in WHOLE:
        out.append((name, ["cargo", "test", "--quiet", *args], len(listed(args))))
    for binary, args in BY_MODULE:
        groups = {}
        for test in listed(args):
            groups.setdefault(test.split("::")[0] if "::" in test else "(root)", []).append(test)
        for module, tests in sorted(groups.items()):
            cmd = ["cargo", "test", "--quiet", *args, "--", "--exact", *tests]
            out.append((f"{binary}::{module}", cmd, len(tests)))
    for name, cmd in COMMANDS:
        out.append((name, cmd, None))
    return out


def run_lanes(selected, lanes):
    """Runs the suites in `lanes` parallel lanes (the slow end-to-end suites in the second, each
    of them with its own emulator; the rest in the first, against the shared one). A suite's
    output is printed whole when it ends, so lanes never interleave lines. Its time is its wall
    time in its lane, the other lane running beside it."""
    queues = [[] for _ in range(lanes)]
    for suite in selected:
        queues[1 if lanes > 1 and suite[0] in SECOND_LANE else 0].append(suite)
    timings, lock = [], threading.Lock()

    def lane(number, queue):
        for name, cmd, n in queue:
            t0 = time.monotonic()
            done = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  text=True, errors="replace")
            secs = time.monotonic() - t0
            with lock:
                count = "" if n is None else f" ({n} tests)"
                print(f"\n== {name}{count}, lane {number + 1}: {secs:.1f} s", flush=True)
                sys.stdout.write(done.stdout)
                sys.stdout.flush()
                timings.append((name, secs, n, done.returncode, number + 1))

    threads = [threading.Thread(target=lane, args=(i, q)) for i, q in enumerate(queues) if q]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    order = [s[0] for s in selected]
    return sorted(timings, key=lambda t: order.index(t[0]))


def main():
    only = [a for a in sys.argv[1:] if not a.startswith("-")]
    if "--list" in sys.argv:
        for name, cmd, n in suites():
            what = f"{n:4} tests" if n is not None else " ".join(cmd)
            print(f"{name:34} {what}")
        return 0
    if not os.environ.get("LIKES_TEST_DYNAMODB_ENDPOINT"):
        sys.exit("suites: the tests need the emulator: run through infra/scripts/with-moto.sh (make test does)")
    missing = uncovered()
    if missing:
        sys.exit("suites: no suite runs these test targets; add them to tests/scripts/suites.py:\n  "
                 + "\n  ".join(missing))
    # The api suite's real OpenID provider (npm, pinned): a no-op once installed.
    if subprocess.run([str(ROOT / "tests/scripts/oidc-install.sh")], cwd=ROOT).returncode != 0:
        sys.exit("suites: the test OpenID provider could not be installed (tests/scripts/oidc-install.sh)")
    started = time.monotonic()
    # `--tests` (not `--all-targets`) leaves out the binaries whose `test = false`, `main` only;
    # `--bench '*'` the bench targets alone (`--benches` would build every lib and bin again, as
    # benchmarks).
    build = ["cargo", "test", "--workspace", "--tests", "--bench", "*", "--no-run"]
    code = subprocess.run(build, cwd=ROOT).returncode
    built = time.monotonic() - started
    if code != 0:
        return report([("build (every test target)", built, None, code, 0)], built)
    selected = [s for s in suites() if not only or s[0] in only or s[0].split("::")[0] in only]
    lanes = int(os.environ.get("LIKES_TEST_LANES", "2"))
    t0 = time.monotonic()
    timings = run_lanes(selected, max(1, lanes))
    wall = time.monotonic() - t0
    return report([("build (every test target)", built, None, code, 0)] + timings, built + wall)


def report(timings, wall):
    print("\n== time per suite (lane 2 beside lane 1: their times overlap)")
    for name, secs, n, code, lane in timings:
        tests = "" if n is None else f"{n:4} tests"
        where = f"lane {lane}" if lane else ""
        print(f"{name:34} {tests:10} {secs:7.1f} s  {where:6}  {'ok' if code == 0 else 'FAILED'}")
    failed = [name for name, _, _, code, _ in timings if code != 0]
    print(f"{'total (wall)':45} {wall:7.1f} s")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
