#!/usr/bin/env bash
# make fuzz-api: schemathesis (from PyPI, into .cache/venv) against a running
# api built from this tree, with the served openapi.yaml, twice: as an admin
# (so the authenticated and admin routes are exercised too) and anonymous.
# Every check, every phase (examples, coverage, fuzzing, stateful); fails
# on any 5xx, any answer that breaks the contract, any request the schema
# allows that is refused and any it forbids that is accepted.
#
# Left out, on purpose: logout and the revocations of a user's sessions
# (DELETE /v1/sessions/current, or DELETE /v1/users/{id}/sessions[/{sessionId}]
# with an id a stateful link found, would end the fuzzer's own session and
# turn every later request into a 401; the end-to-end tests cover them), and positive_data_acceptance where a rule
# cannot be a schema's (scripts/schemathesis.toml: made-up cursors, a
# suspension's end in the past, an admin suspending themselves).
set -euo pipefail
cd "$(dirname "$0")/.."
EXAMPLES="${FUZZ_EXAMPLES:-30}"
PORT="${FUZZ_PORT:-18080}"
VENV=.cache/venv
if [ ! -x "$VENV/bin/st" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q schemathesis==4.32.5
fi
go build -o bin/api ./cmd/api
export SHELF_KEYSPACE="${FUZZ_KEYSPACE:-shelf_fuzz}" SHELF_HTTP_ADDR=127.0.0.1:$PORT SHELF_LOG_LEVEL=warn \
  SHELF_RATE_LIMIT_PER_MINUTE=0 SHELF_ARGON2_MEMORY_KIB=1024 SHELF_ARGON2_TIME=1
bin/api serve > .cache/fuzz-api.log 2>&1 &
api=$!
trap 'kill $api 2>/dev/null; wait $api 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  curl -fs http://127.0.0.1:$PORT/readyz >/dev/null 2>&1 && break
  sleep 0.5
done
user="fuzzer$RANDOM"
curl -fs -X POST http://127.0.0.1:$PORT/v1/users -H 'Content-Type: application/json' \
  -d "{\"username\":\"$user\",\"email\":\"$user@example.org\",\"password\":\"correct horse battery\"}" >/dev/null
bin/api admin grant "$user" >/dev/null
token=$(curl -fs -X POST http://127.0.0.1:$PORT/v1/sessions -H 'Content-Type: application/json' \
  -d "{\"login\":\"$user\",\"password\":\"correct horse battery\"}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])')
start=$(date +%s)
# fuzz AS [st options...]: one schemathesis run, as an admin or anonymous.
fuzz() {
  local as=$1
  shift
  echo "fuzz-api: as $as"
  "$VENV/bin/st" --config-file scripts/schemathesis.toml run http://127.0.0.1:$PORT/openapi.yaml \
    --exclude-path /v1/sessions/current \
    --exclude-operation-id revokeUserSessions --exclude-operation-id revokeUserSession \
    --max-examples "$EXAMPLES" --workers 2 --seed 1 "$@"
}
fuzz admin --header "Authorization: Bearer $token" "$@"
fuzz anonymous "$@"
echo "fuzz-api: $(( $(date +%s) - start )) s against keyspace $SHELF_KEYSPACE"
