#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0-only
# The man pages histd(8) and histctl(8): lint-clean for
# mandoc and groff, and in step with the programs: every option `histd
# --help` lists is an option of histd(8) and the page lists no other; every
# command of `histctl --help`, and every option of each, is in histctl(8).
# Usage: test_man_pages.sh HISTD HISTCTL MAN_DIR (the build's man/).
set -euo pipefail
HISTD=${1:?usage: test_man_pages.sh HISTD HISTCTL MAN_DIR}
HISTCTL=${2:?usage}
MAN=${3:?usage}
FAILURES=0

source "$(dirname "$0")/../expect.sh"

for page in histd histctl; do
  expect_eq "$page.8 exists" "yes" "$([ -f "$MAN/$page.8" ] && echo yes || echo no)"
  lint=$(mandoc -Tlint -Wall "$MAN/$page.8" 2>&1) || lint+=" (exit $?)"
  expect_eq "mandoc -Tlint finds nothing in $page.8" "" "$lint"
  lint=$(groff -ww -z -man "$MAN/$page.8" 2>&1) || lint+=" (exit $?)"
  expect_eq "groff -ww finds nothing in $page.8" "" "$lint"
done

# A page as plain text (bold and underline overstrikes removed).
render() { mandoc -Tascii -Owidth=200 "$MAN/$1.8" | sed 's/.\x08//g'; }
# The lines of one section of a rendered page.
section() { awk -v s="$2" '/^[A-Z]/ {on = ($0 == s); next} on' <(render "$1"); }
# The options a CLI11 --help lists, one per line (-f, --foreground, ...).
# An option's other names follow its first after commas.
help_options() { "$@" --help | grep -oE '^  (-[a-zA-Z],)?--[a-z][a-z-]*(,--[a-z][a-z-]*)*' | tr -d ' ' | tr ',' '\n' | sort -u; }
# The options a section's tagged paragraphs are about (the tag lines).
tagged_options() { grep -E '^ {7}-' | grep -oE '(^|[ ,])--?[a-z][a-z-]*' | tr -d ' ,' | sort -u; }

expect_eq "histd(8) documents exactly the options of histd --help" \
  "$(help_options "$HISTD")" "$(section histd OPTIONS | tagged_options)"
expect_eq "histd(8) names the version histd --version prints" \
  "$("$HISTD" --version)" "$(sed -n 's/^\.TH HISTD 8 [^ ]* "\([^"]*\)".*/\1/p' "$MAN/histd.8")"

expect_eq "histctl(8) documents the global options of histctl --help" \
  "$(help_options "$HISTCTL")" "$(section histctl OPTIONS | tagged_options)"
commands=$(section histctl COMMANDS)
subcommands() { "$@" --help | awk '/^Subcommands:/ {on = 1; next} on && /^  [a-z]/ {print $1}'; }
for c in $(subcommands "$HISTCTL"); do
  words=("$c")
  nested=$(subcommands "$HISTCTL" "$c")
  if [ -n "$nested" ]; then
    for n in $nested; do
      expect_eq "histctl(8) has a paragraph for '$c $n'" "yes" \
        "$(grep -qE "^ {7}$c $n( |$)" <<<"$commands" && echo yes || echo no)"
    done
  else
    expect_eq "histctl(8) has a paragraph for '$c'" "yes" \
      "$(grep -qE "^ {7}$c( |$)" <<<"$commands" && echo yes || echo no)"
  fi
  for o in $(help_options "$HISTCTL" "$c" | grep -vx -e -h -e --help); do
    expect_eq "histctl(8) gives '$c' its option $o" "yes" \
      "$(grep -E "^ {7}$c( |$)" <<<"$commands" | grep -q -- "$o" && echo yes || echo no)"
  done
done
expect_eq "histctl(8) lists the exit statuses 0 to 3" "0 1 2 3" \
  "$(section histctl 'EXIT STATUS' | grep -oE '^ {7}[0-9]+( |$)' | tr -d ' ' | tr '\n' ' ' | sed 's/ $//')"

if [ "$FAILURES" -ne 0 ]; then echo "$FAILURES check(s) failed"; exit 1; fi
echo "all checks passed"
