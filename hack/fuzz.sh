#!/usr/bin/env bash
# Runs every native Go fuzz target in the module (every `func FuzzXxx` in a
# _test.go file) for a while each: FUZZTIME or the first argument, default 3s.
# `make test` runs it briefly; `make fuzz FUZZTIME=10m` is a real session.
set -euo pipefail
cd "$(dirname "$0")/.."
t="${1:-${FUZZTIME:-3s}}"
git ls-files '*_test.go' | grep -v '^examples/' | xargs grep -l '^func Fuzz' | while read -r f; do
	dir="./$(dirname "$f")"
	for target in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | cut -d' ' -f2); do
		echo "== $dir $target ($t)"
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$t" "$dir"
	done
done
