#!/usr/bin/env bash
# make test-browser: the console's main story and the /docs page, then the
# moderator's user search (tests/browser/search.test.mjs, the same api), in
# headless Chromium, driven by playwright-core (from npm, see web-assets),
# against a real api built from this tree. Screenshots land in
# .cache/screenshots; with README_SCREENSHOTS=1 the console's pages are
# also saved into docs/screenshots (docs/console.md's), from a run with fixed
# names (alice, bob, carol, admin) in a keyspace of its own, made for the
# run and dropped after it. Debian's chromium is installed when missing and the
# machine allows it (root with apt-get); otherwise it says what to install.
# The api writes mail to its log (SHELF_MAILER=log, links to this api), where
# the test finds the verification and reset links. A second api on
# BROWSER_PORT+1 requires verified emails for login.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "test-browser: needs Node.js and npm (Debian: apt-get install -y nodejs npm)" >&2
  exit 1
fi
CHROMIUM="${CHROMIUM:-$(command -v chromium || true)}"
if [ -z "$CHROMIUM" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test-browser: installing Debian's chromium" >&2
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    CHROMIUM=$(command -v chromium)
  else
    echo "test-browser: needs Chromium (Debian: apt-get install -y chromium), or set CHROMIUM=/path/to/chrome" >&2
    exit 1
  fi
fi
bash scripts/web-assets.sh
go build -o bin/api ./cmd/api
PORT=${BROWSER_PORT:-18090}
keyspace="${BROWSER_KEYSPACE:-shelf_browser}"
mkdir -p .cache/screenshots
readme_shots=""
fresh=""
if [ "${README_SCREENSHOTS:-}" = 1 ]; then
  readme_shots="$PWD/docs/screenshots"
  mkdir -p "$readme_shots"
  fresh="${keyspace}_$(date +%s)"
  keyspace=$fresh
  go build -o bin/dropkeyspace ./tests/browser/dropkeyspace
fi
# Info level: the log mailer writes each mail (and its link) at info.
export SHELF_KEYSPACE="$keyspace" SHELF_HTTP_ADDR=127.0.0.1:$PORT SHELF_LOG_LEVEL=info SHELF_LOG_FLUSH_INTERVAL=0s \
  SHELF_MAILER=log SHELF_PUBLIC_URL="http://127.0.0.1:$PORT" \
  SHELF_WEBAUTHN_RP_ID=localhost SHELF_WEBAUTHN_ORIGINS="http://localhost:$PORT" \
  SHELF_RATE_LIMIT_PER_MINUTE=0 SHELF_ARGON2_MEMORY_KIB=1024 SHELF_ARGON2_TIME=1
log=.cache/test-browser-api.log
bin/api serve > "$log" 2>&1 &
api=$!
# A second api on the next port, on the same keyspace, refuses login to
# unverified accounts (SHELF_REQUIRE_VERIFIED_EMAIL=true): the console's
# email_not_verified refusal is walked against it. Started once the first
# is ready (the first applies the migrations).
VERIFIED_PORT=$((PORT + 1))
verified_log=.cache/test-browser-api-verified.log
verified=""
cleanup() {
  kill $api 2>/dev/null
  wait $api 2>/dev/null || true
  if [ -n "$verified" ]; then
    kill "$verified" 2>/dev/null
    wait "$verified" 2>/dev/null || true
  fi
  if [ -n "$fresh" ]; then bin/dropkeyspace "$fresh" || echo "test-browser: could not drop the keyspace $fresh" >&2; fi
}
trap cleanup EXIT
# ready waits up to 120 s for the api on port $1 (log $2, called $3).
ready() {
  for _ in $(seq 1 240); do
    curl -fs "http://127.0.0.1:$1/readyz" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  echo "test-browser: $3 did not get ready in 120 s; its log ($2):" >&2
  tail -20 "$2" >&2
  exit 1
}
ready "$PORT" "$log" "the api"
SHELF_HTTP_ADDR=127.0.0.1:$VERIFIED_PORT SHELF_PUBLIC_URL="http://127.0.0.1:$VERIFIED_PORT" SHELF_REQUIRE_VERIFIED_EMAIL=true SHELF_MIGRATE_ON_START=false \
  bin/api serve > "$verified_log" 2>&1 &
verified=$!
ready "$VERIFIED_PORT" "$verified_log" "the api requiring verified emails"
NODE_PATH="$PWD/.cache/npm/node_modules" BASE_URL="http://127.0.0.1:$PORT" PASSKEY_URL="http://localhost:$PORT" CHROMIUM="$CHROMIUM" \
  SCREENSHOTS="$PWD/.cache/screenshots" README_SHOTS="$readme_shots" GRANT="$PWD/bin/api admin grant" \
  MAIL_LOG="$PWD/$log" VERIFIED_URL="http://127.0.0.1:$VERIFIED_PORT" VERIFIED_MAIL_LOG="$PWD/$verified_log" \
  sh -c 'node tests/browser/console.test.mjs; walk=$?; node tests/browser/search.test.mjs || exit 1; exit $walk'
