#!/usr/bin/env bash
# make test-clients: openapi.yaml through tools its users did not write.
# openapi-generator (from Maven Central) makes a Python client and a
# TypeScript client (typescript-fetch); the TypeScript one is compiled
# with `tsc --strict` (from npm); each runs a short story
# (tests/clients/story.py, story.ts) against a real server built from this
# tree, on the Cassandra node `make` started.
#
# The generators' warnings about openapi.yaml fail the run. They print a
# few of their own whatever the document (the OpenAPI 3.1 beta notice, and
# the Python generator's "Failed to get the schema name: null" for any
# model at all): those are the warnings they print for
# tests/clients/baseline.yaml, one path and one model, which is generated
# first; only warnings it has too are allowed.
set -euo pipefail
cd "$(dirname "$0")/.."

GENERATOR_VERSION=7.25.0
# Maven Central's .sha1 of the jar.
GENERATOR_SHA1=56a9bb79e3bb565f477eddca2c6daa288a9c6f35
JAR=.cache/openapi-generator-cli-$GENERATOR_VERSION.jar
OUT=.cache/clients
PORT="${CLIENTS_PORT:-18091}"

if [ ! -f "$JAR" ] || [ "$(sha1sum "$JAR" | cut -d' ' -f1)" != "$GENERATOR_SHA1" ]; then
  mkdir -p .cache
  curl -fsSL --retry 3 -o "$JAR.part" \
    "https://repo1.maven.org/maven2/org/openapitools/openapi-generator-cli/$GENERATOR_VERSION/openapi-generator-cli-$GENERATOR_VERSION.jar"
  if [ "$(sha1sum "$JAR.part" | cut -d' ' -f1)" != "$GENERATOR_SHA1" ]; then
    echo "test-clients: the generator jar's sha1 is not Maven Central's" >&2
    exit 1
  fi
  mv "$JAR.part" "$JAR"
fi

rm -rf "$OUT"
mkdir -p "$OUT"

# generate GENERATOR SPEC DIR [options...]: prints the warnings, one a line.
generate() {
  local generator=$1 spec=$2 dir=$3
  shift 3
  mkdir -p "$(dirname "$dir")"
  if ! java -jar "$JAR" generate -g "$generator" -i "$spec" -o "$dir" "$@" > "$dir.log" 2>&1; then
    cat "$dir.log" >&2
    echo "test-clients: openapi-generator $generator failed on $spec" >&2
    exit 1
  fi
  grep -E '^\[[^]]*\] WARN ' "$dir.log" | sed -E 's/^\[[^]]*\] WARN +//' | sort -u || true
}

warnings_failed=0
# check_warnings GENERATOR DIR [options...]
check_warnings() {
  local generator=$1 dir=$2
  shift 2
  local allowed found extra
  allowed=$(generate "$generator" tests/clients/baseline.yaml "$OUT/baseline-$generator" "$@")
  found=$(generate "$generator" openapi.yaml "$dir" "$@")
  extra=$(comm -23 <(echo "$found") <(echo "$allowed"))
  echo "test-clients: $generator: the generator's own warnings (it prints them for the baseline too):"
  sed 's/^/  /' <<< "$allowed"
  if [ -n "$extra" ]; then
    echo "test-clients: $generator warns about openapi.yaml:" >&2
    sed 's/^/  /' <<< "$extra" >&2
    warnings_failed=1
  fi
}

check_warnings python "$OUT/python" --package-name shelf_client
check_warnings typescript-fetch "$OUT/typescript/gen"
if [ "$warnings_failed" = 1 ]; then
  exit 1
fi

# The Python client, into a virtualenv of its own, its dependencies pinned.
python3 -m venv "$OUT/venv"
"$OUT/venv/bin/pip" install -q --disable-pip-version-check -c tests/clients/constraints.txt "./$OUT/python"

# The TypeScript client and the story, compiled with --strict.
cp tests/clients/story.ts tests/clients/tsconfig.json tests/clients/package.json \
  tests/clients/package-lock.json "$OUT/typescript/"
(cd "$OUT/typescript" && npm ci --no-audit --no-fund --loglevel=error >/dev/null && npx --no-install tsc -p .)

# A server of this tree, on a keyspace of its own.
go build -o bin/api ./cmd/api
export SHELF_KEYSPACE="${CLIENTS_KEYSPACE:-shelf_clients}" SHELF_HTTP_ADDR="127.0.0.1:$PORT" SHELF_LOG_LEVEL=warn \
  SHELF_RATE_LIMIT_PER_MINUTE=0 SHELF_ARGON2_MEMORY_KIB=1024 SHELF_ARGON2_TIME=1
bin/api serve > "$OUT/api.log" 2>&1 &
api=$!
trap 'kill $api 2>/dev/null; wait $api 2>/dev/null || true' EXIT
for _ in $(seq 1 240); do
  curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1 && break
  if ! kill -0 $api 2>/dev/null; then
    cat "$OUT/api.log" >&2
    exit 1
  fi
  sleep 0.5
done
export SHELF_URL="http://127.0.0.1:$PORT"

"$OUT/venv/bin/python" tests/clients/story.py
node "$OUT/typescript/out/story.js"
echo "test-clients: ok (openapi-generator $GENERATOR_VERSION: python, typescript-fetch; $(cd "$OUT/typescript" && npx --no-install tsc --version) --strict)"
