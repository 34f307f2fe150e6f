#!/usr/bin/env bash
# The project's test command (README: "Quick start"). Everything it
# needs comes from the Go module proxy, but Debian's nats-server for the
# tests that run against the oldest supported server: they skip, saying how
# to install it, when it is missing, and fail with CI=true (.ci/run
# installs it).
set -euo pipefail
cd "$(dirname "$0")"
echo "== gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi
echo "== go vet"
go vet ./...
echo "== go test -race (unit, golden, fuzz seed corpora)"
go test -race -count=1 ./...
