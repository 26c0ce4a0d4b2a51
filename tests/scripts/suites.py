#!/usr/bin/env python3
"""`make test`: builds every test target once, then runs the suites one after another against one
emulator (started by infra/scripts/with-moto.sh), and prints what each suite took.

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
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent

# (suite name, cargo arguments): whole binaries, run as they are.
WHOLE = [
    ("unit", ["--workspace", "--lib"]),
    ("bench", ["-p", "likes-bench", "--bin", "likes-bench"]),
    ("benches (test mode)", ["-p", "likes-bench", "--benches"]),
    ("auth", ["-p", "likes-auth", "--test", "auth"]),
    ("admin", ["-p", "likes-admin", "--test", "admin"]),
    ("api", ["-p", "likes-api", "--test", "api"]),
    ("aggregator", ["-p", "count-aggregator", "--test", "aggregator"]),
    ("events", ["-p", "like-events", "--test", "events"]),
    ("worker", ["-p", "erase-worker", "--test", "worker"]),
]
# Binaries that span crates: one suite per top-level module.
BY_MODULE = [
    ("integration", ["-p", "likes-harness", "--test", "integration"]),
    ("e2e", ["-p", "likes-local", "--test", "e2e"]),
]
# Not cargo's: the spec-driven HTTP fuzz of the local stack, last.
COMMANDS = [("api-fuzz", ["tests/scripts/api-fuzz.sh"])]


def cargo(args, capture=False):
    cmd = ["cargo", "test", "--quiet", *args]
    if capture:
        return subprocess.run(cmd, cwd=ROOT, check=True, capture_output=True, text=True).stdout
    return subprocess.run(cmd, cwd=ROOT).returncode


def listed(args):
    """Every test of the selection, by full name (`--list --format terse`: `name: test`)."""
    out = cargo([*args, "--", "--list", "--format", "terse"], capture=True)
    return [line[: -len(": test")] for line in out.splitlines() if line.endswith(": test")]


def uncovered():
    """Test targets of the workspace that no suite runs."""
    meta = subprocess.run(["cargo", "metadata", "--format-version", "1", "--no-deps"], cwd=ROOT,
                          check=True, capture_output=True, text=True).stdout
    covered = {(a[1], a[3]) for _, a in WHOLE + BY_MODULE if "--test" in a or "--bin" in a}
    missing = []
    for package in json.loads(meta)["packages"]:
        for target in package["targets"]:
            kinds = set(target["kind"])
            name = (package["name"], target["name"])
            if "test" in kinds and name not in covered:
                missing.append(f"{name[0]} --test {name[1]}")
            elif "bin" in kinds and target.get("test", True) and name not in covered:
                missing.append(f"{name[0]} --bin {name[1]} (set `test = false`, or add a suite)")
            elif "bench" in kinds and package["name"] != "likes-bench":
                missing.append(f"{name[0]} --bench {name[1]}")
    return missing


def suites():
    """(name, cargo arguments, the test names it runs)."""
    out = []
    for name, args in WHOLE:
        out.append((name, args, listed(args)))
    for binary, args in BY_MODULE:
        groups = {}
        for test in listed(args):
            groups.setdefault(test.split("::")[0] if "::" in test else "(root)", []).append(test)
        for module, tests in sorted(groups.items()):
            out.append((f"{binary}::{module}", [*args, "--", "--exact", *tests], tests))
    return out


def main():
    only = [a for a in sys.argv[1:] if not a.startswith("-")]
    if "--list" in sys.argv:
        for name, _, tests in suites():
            print(f"{name:34} {len(tests):4} tests")
        for name, cmd in COMMANDS:
            print(f"{name:34} {' '.join(cmd)}")
        return 0
    if not os.environ.get("LIKES_TEST_DYNAMODB_ENDPOINT"):
        sys.exit("suites: the tests need the emulator: run through infra/scripts/with-moto.sh (make test does)")
    missing = uncovered()
    if missing:
        sys.exit("suites: no suite runs these test targets; add them to tests/scripts/suites.py:\n  "
                 + "\n  ".join(missing))
    timings = []
    started = time.monotonic()
    # `--tests` (not `--all-targets`) leaves out the binaries whose `test = false`: `main` only.
    build = ["cargo", "test", "--workspace", "--tests", "--benches", "--no-run"]
    code = subprocess.run(build, cwd=ROOT).returncode
    timings.append(("build (every test target)", time.monotonic() - started, None, code))
    if code != 0:
        return report(timings)
    selected = [s for s in suites() if not only or s[0] in only or s[0].split("::")[0] in only]
    for name, args, tests in selected:
        print(f"\n== {name} ({len(tests)} tests)", flush=True)
        t0 = time.monotonic()
        code = cargo(args) if tests else 0
        timings.append((name, time.monotonic() - t0, len(tests), code))
    for name, cmd in COMMANDS:
        if only and name not in only:
            continue
        print(f"\n== {name}", flush=True)
        t0 = time.monotonic()
        code = subprocess.run(cmd, cwd=ROOT).returncode
        timings.append((name, time.monotonic() - t0, None, code))
    return report(timings)


def report(timings):
    total = sum(t for _, t, _, _ in timings)
    print("\n== time per suite")
    for name, secs, n, code in timings:
        tests = "" if n is None else f"{n:4} tests"
        print(f"{name:34} {tests:10} {secs:7.1f} s  {'ok' if code == 0 else 'FAILED'}")
    failed = [name for name, _, _, code in timings if code != 0]
    print(f"{'total':45} {total:7.1f} s")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
