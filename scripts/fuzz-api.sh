#!/usr/bin/env bash
# make fuzz-api: schemathesis (from PyPI, into .cache/venv) against a running
# api built from this tree, with the served openapi.yaml, as an admin (so
# the authenticated and admin routes are exercised too). Fails on any 5xx
# or any answer that breaks the contract.
#
# Left out, on purpose: logout (DELETE /v1/sessions/current would end the
# fuzzer's own session and turn every later request into a 401), and the
# positive_data_acceptance check (it expects any schema-valid value to be
# accepted, but cursors are opaque and must come from the server: a made-up
# one is rightly a 400). Both are covered by the end-to-end tests.
set -euo pipefail
cd "$(dirname "$0")/.."
EXAMPLES="${FUZZ_EXAMPLES:-30}"
VENV=.cache/venv
if [ ! -x "$VENV/bin/st" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q schemathesis==4.32.5
fi
go build -o bin/api ./cmd/api
export SHELF_KEYSPACE=shelf_fuzz SHELF_HTTP_ADDR=127.0.0.1:18080 SHELF_LOG_LEVEL=warn \
  SHELF_RATE_LIMIT_PER_MINUTE=0 SHELF_ARGON2_MEMORY_KIB=1024 SHELF_ARGON2_TIME=1
bin/api serve > .cache/fuzz-api.log 2>&1 &
api=$!
trap 'kill $api 2>/dev/null; wait $api 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  curl -fs http://127.0.0.1:18080/readyz >/dev/null 2>&1 && break
  sleep 0.5
done
user="fuzzer$RANDOM"
curl -fs -X POST http://127.0.0.1:18080/v1/users -H 'Content-Type: application/json' \
  -d "{\"username\":\"$user\",\"email\":\"$user@example.org\",\"password\":\"correct horse battery\"}" >/dev/null
bin/api admin grant "$user" >/dev/null
token=$(curl -fs -X POST http://127.0.0.1:18080/v1/sessions -H 'Content-Type: application/json' \
  -d "{\"login\":\"$user\",\"password\":\"correct horse battery\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
start=$(date +%s)
"$VENV/bin/st" run http://127.0.0.1:18080/openapi.yaml \
  --header "Authorization: Bearer $token" \
  --checks all --exclude-checks positive_data_acceptance \
  --exclude-path /v1/sessions/current \
  --max-examples "$EXAMPLES" --workers 2 --seed 1 "$@"
echo "fuzz-api: $(( $(date +%s) - start )) s against keyspace $SHELF_KEYSPACE"
