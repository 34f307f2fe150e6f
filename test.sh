#!/usr/bin/env bash
# The project's test command (README: "Quick start"). Everything it
# needs comes from the Go module proxy, but three Debian packages: nats-server
# (the tests against the oldest supported server), chromium (the HTML
# report's browser test) and postgresql (the PostgreSQL sink's tests start
# throwaway servers from its initdb and pg_ctl). Without them those tests
# skip, saying how to install them, and with CI=true they fail (.ci/run
# installs them).
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
