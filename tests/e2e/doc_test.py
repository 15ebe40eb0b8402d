#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-only
"""The doc-test's runner (tests/e2e/test_docs.sh): runs every command that
README.md and docs/ show, against a real histd on the test's own mount,
socket, state and pin directories, and checks that each succeeds and prints
what the document shows. The convention it enforces is in
docs/design/tests.md: the kind of every fenced block (```sh, ```console,
```text, ...) and the <!-- doc-test: ... --> directives before a block."""
import argparse
import difflib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

FENCE = re.compile(r"^\s*```(.*)$")
DIRECTIVE = re.compile(r"^<!--\s*doc-test:\s*(.*?)\s*-->\s*$")
PROMPT = re.compile(r"^\s*\$ ")
RUN_KINDS = ("sh", "console")
# The directives a block may carry, and whether each takes a value.
DIRECTIVES = {"skip": True, "starts histd": False, "exit": True, "as nobody": False,
              "numbers vary": False, "cpus": True, "histd": True}


class Block:
    def __init__(self, path, line, kind, directives):
        self.path, self.line, self.kind, self.directives = path, line, kind, directives
        self.lines = []

    def where(self):
        return f"{self.path}:{self.line}"


def parse_directive(text):
    for name, valued in sorted(DIRECTIVES.items(), key=lambda d: -len(d[0])):
        if text == name:
            return name, ""  # a value it needs is missing: said by parse()
        if valued and (text.startswith(name + " ") or text.startswith(name + ":")):
            return name, text[len(name) + 1:].strip()
    return None, text


def parse(path, errors):
    """The fenced blocks of a Markdown file, with the directives before each."""
    blocks, pending, block = [], {}, None
    with open(path, encoding="utf-8") as f:
        for number, raw in enumerate(f, 1):
            line = raw.rstrip("\n")
            fence = FENCE.match(line)
            if block is not None:
                if fence and fence.group(1) == "":
                    blocks.append(block)
                    block = None
                else:
                    block.lines.append(line)
                continue
            if fence:
                kind = fence.group(1).strip()
                if not kind:
                    errors.append(f"{path}:{number}: a fenced block without its kind (```sh, ```console, ```text, ...)")
                block, pending = Block(path, number, kind, pending), {}
                continue
            directive = DIRECTIVE.match(line)
            if directive:
                name, value = parse_directive(directive.group(1))
                if name is None:
                    errors.append(f"{path}:{number}: unknown doc-test directive '{value}'")
                elif DIRECTIVES[name] and not value:
                    errors.append(f"{path}:{number}: doc-test directive '{name}' needs a value")
                else:
                    pending[name] = value
            elif line.strip():
                pending = {}
                if PROMPT.match(line):
                    errors.append(f"{path}:{number}: a command outside a fenced block: {line.strip()}")
    if block is not None:
        errors.append(f"{block.where()}: the fenced block never ends")
    for b in blocks:
        if b.kind not in RUN_KINDS and any(PROMPT.match(x) for x in b.lines):
            errors.append(f"{b.where()}: '$ ' commands in a ```{b.kind} block: make it ```console")
    return blocks


def possible_cpus():
    count = 0
    with open("/sys/devices/system/cpu/possible") as f:
        for part in f.read().strip().split(","):
            lo, _, hi = part.partition("-")
            count += int(hi or lo) - int(lo) + 1
    return count


class Runner:
    def __init__(self, args):
        self.args = args
        self.failures = 0
        self.count = 0
        self.histd = None  # the runner's own histd (Popen) for the block
        self.bin = os.path.join(args.work, "bin")
        os.makedirs(self.bin, exist_ok=True)
        # First in PATH; histctl a copy anyone may run (`as nobody`).
        shutil.copy(args.histctl, os.path.join(self.bin, "histctl"))
        with open(os.path.join(self.bin, "histd"), "w") as f:
            f.write(HISTD_WRAPPER.format(real=os.path.realpath(args.histd)))
        for name in os.listdir(self.bin):
            os.chmod(os.path.join(self.bin, name), 0o755)

    # ---- paths: the documents' defaults and the test's
    def paths(self):
        n = self.count
        return [("/run/histd/histd.sock", os.path.join(self.args.work, "histd.sock")),
                ("/run/histd/tracing", self.args.mnt),
                ("/var/lib/histd", os.path.join(self.args.work, f"state-{n}")),
                ("/sys/fs/bpf/histd", os.path.join(self.args.pin, f"b{n}")),
                ("/etc/histd/triggers.d", os.path.join(self.args.work, f"triggers-{n}.d"))]

    def to_test(self, text):
        for doc, test in self.paths():
            text = text.replace(doc, test)
        return text

    def to_doc(self, text):
        for doc, test in sorted(self.paths(), key=lambda p: -len(p[1])):
            text = text.replace(test, doc)
        return text

    def env(self):
        env = dict(os.environ)
        paths = dict(self.paths())
        env.update(PATH=self.bin + ":" + env.get("PATH", "/usr/bin:/bin"), HISTCTL="histctl",
                   HISTD_SOCKET=paths["/run/histd/histd.sock"], DOC_MNT=paths["/run/histd/tracing"],
                   DOC_SOCKET=paths["/run/histd/histd.sock"], DOC_STATE=paths["/var/lib/histd"],
                   DOC_PIN=paths["/sys/fs/bpf/histd"], DOC_CONFIG=paths["/etc/histd/triggers.d"])
        return env

    # ---- histd
    def start_histd(self, options):
        log = open(os.path.join(self.args.work, f"histd-{self.count}.log"), "w")
        self.histd = subprocess.Popen([os.path.join(self.bin, "histd"), "--foreground"] + options.split(),
                                      env=self.env(), stdout=log, stderr=subprocess.STDOUT, cwd="/")
        for _ in range(200):
            if os.path.exists(os.path.join(self.args.mnt, "events")):
                return True
            if self.histd.poll() is not None:
                break
            time.sleep(0.1)
        self.fail(f"histd did not come up (options: '{options}'):\n" + open(log.name).read())
        self.stop(self.histd.pid)
        return False

    def daemon_pid(self):
        out = subprocess.run(["histctl", "status", "--json"], env=self.env(), capture_output=True, text=True)
        return json.loads(out.stdout).get("pid") if out.returncode == 0 else None

    def stop(self, pid):
        if pid is None:
            return self.unmount()
        with open(os.path.join(self.args.work, "doc-test.pids"), "a") as f:
            f.write(f"{pid}\n")
        try:
            os.kill(pid, signal.SIGTERM)
            for _ in range(100):
                if self.histd is not None and self.histd.pid == pid:
                    if self.histd.poll() is not None:
                        break
                else:
                    os.kill(pid, 0)
                time.sleep(0.1)
        except ProcessLookupError:
            pass
        self.histd = None
        self.unmount()

    def unmount(self):
        # A histd that could not be stopped (or found) ends with its tree.
        if subprocess.run(["mountpoint", "-q", self.args.mnt]).returncode == 0:
            subprocess.run(["fusermount3", "-u", self.args.mnt])

    # ---- blocks
    def fail(self, message):
        self.failures += 1
        print("FAIL: " + message)

    def run_block(self, block):
        d = block.directives
        if "skip" in d:
            print(f"skip: {block.where()}: {d['skip']}")
            return
        self.count += 1
        own = "starts histd" not in d
        if own and not self.start_histd(d.get("histd", "")):
            return
        try:
            if block.kind == "sh":
                self.run_script(block)
            else:
                self.run_console(block)
        finally:
            self.stop(self.histd.pid if own and self.histd else self.daemon_pid())

    def shell(self, script, nobody):
        command = ["bash", "-c", script]
        if nobody:
            command = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] + command
        out_path = os.path.join(self.args.work, "doc-test.out")
        # A file, not a pipe: a histd the block starts daemonizes, and its
        # histd-cc keeps the inherited descriptors open.
        with open(out_path, "w") as out:
            rc = subprocess.run(command, env=self.env(), cwd=self.args.root, stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, timeout=300).returncode
        with open(out_path, errors="replace") as f:
            return rc, self.to_doc(f.read())

    def run_script(self, block):
        expected = int(block.directives.get("exit", "0"))
        rc, out = self.shell("set -euo pipefail\n" + self.to_test("\n".join(block.lines)) + "\n",
                             "as nobody" in block.directives)
        if rc != expected:
            self.fail(f"{block.where()}: exit status {rc}, not {expected}; output:\n{out}")
        else:
            print(f"ok: {block.where()} (```sh, {len(block.lines)} lines)")

    def commands(self, block):
        cmds = []
        for line in block.lines:
            if PROMPT.match(line):
                cmds.append((line.split("$ ", 1)[1], []))
            elif cmds:
                cmds[-1][1].append(line)
        return cmds

    def run_console(self, block):
        cmds = self.commands(block)
        statuses = block.directives.get("exit", "0").split()
        if len(statuses) not in (1, len(cmds)):
            return self.fail(f"{block.where()}: 'exit' gives {len(statuses)} statuses for {len(cmds)} commands")
        for i, (cmd, expected) in enumerate(cmds):
            want = int(statuses[i if len(statuses) > 1 else 0])
            rc, out = self.shell("set -o pipefail\n" + self.to_test(cmd), "as nobody" in block.directives)
            if rc != want:
                self.fail(f"{block.where()}: '$ {cmd}': exit status {rc}, not {want}; output:\n{out}")
            elif not self.same_output(block, cmd, expected, out):
                pass
            else:
                print(f"ok: {block.where()}: $ {cmd}")

    def same_output(self, block, cmd, expected, out):
        normalize = "numbers vary" in block.directives
        if "cpus" in block.directives and possible_cpus() != int(block.directives["cpus"]):
            print(f"note: {block.where()}: numbers compared loosely: the document's are for "
                  f"{block.directives['cpus']} possible CPUs, this machine has {possible_cpus()}")
            normalize = True
        want, got = strip(expected), strip(out.split("\n"))
        if normalize:
            want, got = [re.sub(r"\d+", "N", x) for x in want], [re.sub(r"\d+", "N", x) for x in got]
        if want == got:
            return True
        diff = "\n".join(difflib.unified_diff(want, got, "document", "histd", lineterm=""))
        self.fail(f"{block.where()}: '$ {cmd}' prints something else:\n{diff}")
        return False


def strip(lines):
    lines = [x.rstrip() for x in lines]
    while lines and not lines[-1]:
        lines.pop()
    return lines


# The documents' `histd`: the test's binary, with the test's paths for what
# the document leaves to the defaults.
HISTD_WRAPPER = """#!/usr/bin/env bash
args=("$@")
for opt in mount:DOC_MNT socket:DOC_SOCKET state-dir:DOC_STATE pin-dir:DOC_PIN config-dir:DOC_CONFIG; do
  given=no
  for a in "$@"; do [[ "$a" == --${{opt%%:*}} || "$a" == --${{opt%%:*}}=* ]] && given=yes; done
  var=${{opt#*:}}
  [ $given = yes ] || args+=(--${{opt%%:*}} "${{!var}}")
done
exec {real} "${{args[@]}}"
"""


def main():
    p = argparse.ArgumentParser()
    for name in ("histd", "histctl", "work", "mnt", "pin", "root"):
        p.add_argument("--" + name, required=True)
    p.add_argument("documents", nargs="+")
    args = p.parse_args()
    errors, blocks = [], []
    for doc in args.documents:
        blocks += parse(doc, errors)
    for e in errors:
        print("FAIL: " + e)
    runner = Runner(args)
    runner.failures += len(errors)
    for block in blocks:
        if block.kind in RUN_KINDS:
            runner.run_block(block)
    print(f"{runner.failures} doc-test failure(s)" if runner.failures else "every documented command ran as shown")
    return 1 if runner.failures else 0


if __name__ == "__main__":
    sys.exit(main())
