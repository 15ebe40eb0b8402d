#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
# The commit convention (CONTRIBUTING.md) for every commit since it was
# adopted: a subject "area: imperative summary" of at most 72 characters,
# a blank line, then a body that says why (and what was measured).
# Usage: test_commits.py REPO [FIRST] (FIRST: the first commit checked).
# A tree without its history (a tarball, the README test's copy, a shallow
# clone) or a machine without git has nothing to check: exit 77, which ctest
# reports as skipped.
import re
import shutil
import subprocess
import sys

# The first commit made under the convention; those before it are history.
ADOPTED = "154e4de"
SUBJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_./+-]*(, [A-Za-z0-9][A-Za-z0-9_./+-]*)*: \S.*$")
SKIPPED = 77
MERGE = re.compile(r"^Merge branch '[^']+'( into \S+)?(: \S.*)?$")


def problems(message):
    lines = message.rstrip("\n").split("\n")
    subject = lines[0]
    found = []
    if len(subject) > 72:
        found.append(f"subject is {len(subject)} characters (at most 72)")
    if not (SUBJECT.match(subject) or MERGE.match(subject)):
        found.append("subject is not 'area: imperative summary'")
    if subject.endswith("."):
        found.append("subject ends with a period")
    if MERGE.match(subject):
        return found
    if len(lines) < 3 or lines[1] != "" or not any(l.strip() for l in lines[2:]):
        found.append("no body after a blank line (why, and what was measured)")
    return found


def main():
    repo = sys.argv[1]
    first = sys.argv[2] if len(sys.argv) > 2 else ADOPTED
    if shutil.which("git") is None:
        print("SKIP: git is not installed: no commits to check")
        return SKIPPED
    git = ["git", "-C", repo]
    if subprocess.run(git + ["rev-parse", "--git-dir"], capture_output=True).returncode != 0:
        print(f"SKIP: {repo} is not a git checkout: no commits to check")
        return SKIPPED
    if subprocess.run(git + ["cat-file", "-e", first + "^{commit}"], capture_output=True).returncode != 0:
        print(f"SKIP: {first} is not in this clone (a shallow one?): no history to check")
        return SKIPPED
    out = subprocess.run(git + ["log", "--format=%h%x00%B%x01", f"{first}^..HEAD"],
                         capture_output=True, text=True, check=True).stdout
    failures = 0
    count = 0
    for record in filter(None, (r.strip("\n") for r in out.split("\x01"))):
        sha, message = record.split("\x00", 1)
        count += 1
        for p in problems(message):
            print(f"FAIL: {sha} {message.splitlines()[0]!r}: {p}")
            failures += 1
    print(f"{count} commits since {first} checked, {failures} problems")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
