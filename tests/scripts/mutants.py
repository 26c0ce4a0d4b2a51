#!/usr/bin/env python3
"""Runs the in-repo mutants (tests/mutants/mutants.toml): each deliberate defect is applied to a
scratch copy of the working tree, its named test is built and run, and the mutant is reported
caught, missed (the test passed), stale (its text is no longer in the file), unviable (the
mutated code does not build), timeout (the test ran past its limit) or broken (the test
failed, but not on an assertion of its own: a harness that could not start, an emulator that
went away). Caught means only this: a test of the named test binary failed on an assertion (a
`panicked at` under its `---- name stdout ----`), and the unmutated test, run again at once,
passes — so a stalled emulator can never turn every later mutant into a catch. A mutant with
`runs = N` (a test whose inputs are random) is run N times and reports its catch rate; it
counts as caught only if every run caught it. Exits non-zero unless every mutant is caught.

    infra/scripts/with-moto.sh tests/scripts/mutants.py [--head] [NAME ...]   # what `make mutants` runs
    tests/scripts/mutants.py --list

--head copies the last commit instead of the working tree (uncommitted edits left out).

The copy builds in its own target dir (<target>/mutants) so that it never clobbers the
workspace's artifacts; each test runs first without any mutant and must pass.
"""
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
LIST = ROOT / "tests" / "mutants" / "mutants.toml"
TEST_TIMEOUT = 1800


def load():
    with open(LIST, "rb") as f:
        mutants = tomllib.load(f)["mutant"]
    for m in mutants:
        for key in ("name", "guarantee", "why", "file", "from", "to", "test"):
            if key not in m:
                sys.exit(f"mutants.toml: mutant {m.get('name', '?')} has no {key}")
    return mutants


def copy_tree(dest: Path, head: bool):
    """The working tree as git sees it (tracked and new files, ignored ones left out), or the
    last commit."""
    if head:
        archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
        files = []
    else:
        files = subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"],
            cwd=ROOT, check=True, capture_output=True,
        ).stdout.decode().split("\0")
    for rel in filter(None, files):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    # The pinned virtualenvs (moto, the SAM CLI) are shared, not rebuilt.
    for venv in ROOT.glob(".venv*"):
        (dest / venv.name).symlink_to(venv)


def build_command(test: str):
    argv = shlex.split(test)
    cut = argv.index("--") if "--" in argv else len(argv)
    return argv[:cut] + ["--no-run"]


def run(argv, cwd, env, log):
    """The exit status (or "timeout") and the output, which is also appended to the log."""
    try:
        done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, timeout=TEST_TIMEOUT)
        code, output = done.returncode, done.stdout.decode(errors="replace")
    except subprocess.TimeoutExpired as e:
        code, output = "timeout", (e.output or b"").decode(errors="replace")
    with open(log, "a") as out:
        out.write(output)
    return code, output


def failed_on_assertion(output: str) -> bool:
    """Whether a test failed on one of its own assertions: libtest prints each failed test's
    output under `---- <name> stdout ----`, and a failed assertion there as `panicked at`."""
    return "test result: FAILED" in output and any(
        "panicked at" in section.split("\n---- ")[0]
        for section in output.split("\n---- ")[1:])


def verdict_of(test: str, cwd, env, log) -> str:
    """One run of a mutated test: caught, missed, timeout or broken (see the module's docs)."""
    code, output = run(shlex.split(test), cwd, env, log)
    if code == 0:
        return "missed"
    if code == "timeout":
        return "timeout"
    return "caught" if failed_on_assertion(output) else "broken"


def main():
    args = sys.argv[1:]
    head = "--head" in args
    args = [a for a in args if a != "--head"]
    mutants = load()
    if args == ["--list"]:
        for m in mutants:
            print(f"{m['name']:45} {m['guarantee']:24} {m['test']}")
        return 0
    if args:
        unknown = set(args) - {m["name"] for m in mutants}
        if unknown:
            sys.exit(f"mutants: no mutant named {', '.join(sorted(unknown))} (see --list)")
        mutants = [m for m in mutants if m["name"] in args]
    if any(m.get("moto") for m in mutants) and not os.environ.get("LIKES_TEST_DYNAMODB_ENDPOINT"):
        sys.exit("mutants: some tests need the emulator: run through infra/scripts/with-moto.sh "
                 "(make mutants does)")

    target = Path(os.environ.get("CARGO_TARGET_DIR", ROOT / "target")) / "mutants"
    env = dict(os.environ, CARGO_TARGET_DIR=str(target), CARGO_INCREMENTAL="0")
    scratch = Path(tempfile.mkdtemp(prefix="likes-mutants-"))
    log = scratch.with_suffix(".log")
    print(f"mutants: scratch copy {scratch}, target {target}, log {log}", flush=True)
    try:
        copy_tree(scratch, head)
        for test in sorted({m["test"] for m in mutants}):
            print(f"baseline: {test}", flush=True)
            code, _ = run(shlex.split(test), scratch, env, log)
            if code != 0:
                sys.exit(f"mutants: `{test}` fails without any mutant ({code}); see {log}")

        results = []
        for m in mutants:
            path = scratch / m["file"]
            original = path.read_text()
            found = original.count(m["from"])
            started = time.monotonic()
            if found != 1:
                verdict = "stale"
            else:
                path.write_text(original.replace(m["from"], m["to"]))
                try:
                    if run(build_command(m["test"]), scratch, env, log)[0] != 0:
                        verdict = "unviable"
                    else:
                        runs = [verdict_of(m["test"], scratch, env, log)
                                for _ in range(int(m.get("runs", 1)))]
                        verdict = next((v for v in ("broken", "timeout", "missed")
                                        if v in runs), "caught")
                        if len(runs) > 1:
                            rate = f"{runs.count('caught')}/{len(runs)}"
                            print(f"          {m['name']}: caught in {rate} runs", flush=True)
                finally:
                    path.write_text(original)
                if verdict == "caught":
                    # The catch counts only if the unmutated test passes again now.
                    code, _ = run(shlex.split(m["test"]), scratch, env, log)
                    if code != 0:
                        verdict = "broken"
            secs = time.monotonic() - started
            results.append((m, verdict))
            print(f"{verdict:9} {m['guarantee']:24} {m['name']:45} {secs:6.0f} s", flush=True)

        print()
        for guarantee in dict.fromkeys(m["guarantee"] for m, _ in results):
            mine = [v for m, v in results if m["guarantee"] == guarantee]
            print(f"{guarantee:24} caught {mine.count('caught')}/{len(mine)}")
        caught = sum(v == "caught" for _, v in results)
        print(f"mutants: caught {caught}/{len(results)}, "
              f"missed {sum(v == 'missed' for _, v in results)}, "
              f"stale {sum(v == 'stale' for _, v in results)}, "
              f"unviable {sum(v == 'unviable' for _, v in results)}, "
              f"timeout {sum(v == 'timeout' for _, v in results)}, "
              f"broken {sum(v == 'broken' for _, v in results)}")
        for m, v in results:
            if v != "caught":
                print(f"  {v}: {m['name']} ({m['why']}); test: {m['test']}")
        return 0 if caught == len(results) else 1
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
