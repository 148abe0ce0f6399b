#!/usr/bin/env bash
# Runs every fuzz target of package wire and its internal packages for a few
# seconds each (FUZZTIME, default 5s). Usage: bash wire/fuzz.sh [fuzztime]
set -euo pipefail
cd "$(dirname "$0")/.."
t="${1:-${FUZZTIME:-5s}}"
for target in FuzzProtoWatch FuzzJSONWatch FuzzProtoList FuzzJSONList FuzzDropManagedFieldsProto FuzzDropManagedFieldsJSON; do
	go test -run '^$' -fuzz "^${target}\$" -fuzztime "$t" ./wire/
done
go test -run '^$' -fuzz '^FuzzReadValue$' -fuzztime "$t" ./wire/internal/jsonwire/
