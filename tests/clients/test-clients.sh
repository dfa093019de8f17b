#!/usr/bin/env bash
# make test-clients: openapi.yaml through tools its users did not write.
# Four generated clients each run a short story against a real server
# built from this tree, on the Cassandra node `make` started:
# - openapi-generator (from Maven Central): a Python client (story.py) and
#   a TypeScript one (typescript-fetch, story.ts);
# - openapi-python-client (from PyPI): a Python client (story_opc.py),
#   type checked with `mypy --strict` together with the story;
# - openapi-typescript and openapi-fetch (from npm): paths and schemas as
#   TypeScript types, called through openapi-fetch (story_fetch.mts).
# Both TypeScript stories are compiled with `tsc --strict` (TypeScript 5:
# openapi-typescript 7.13 wants `typescript ^5.x`).
#
# The generators' warnings about openapi.yaml fail the run. openapi-
# generator prints a few of its own whatever the document (the OpenAPI
# 3.1 beta notice, and the Python generator's "Failed to get the schema
# name: null" for any model at all): those are the warnings it prints for
# tests/clients/baseline.yaml, one path and one model, which is generated
# first; only warnings it has too are allowed. openapi-python-client and
# openapi-typescript print nothing but their progress lines for a
# document they read whole; any other line fails the run.
set -euo pipefail
cd "$(dirname "$0")/../.."

GENERATOR_VERSION=7.25.0
# Maven Central's .sha1 of the jar.
GENERATOR_SHA1=56a9bb79e3bb565f477eddca2c6daa288a9c6f35
JAR=.cache/openapi-generator-cli-$GENERATOR_VERSION.jar
OUT=.cache/clients
PORT="${CLIENTS_PORT:-18092}"

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

# only_progress NAME LOG PATTERN: fails the run (later) when LOG has a line
# that is not the generator's progress (PATTERN).
only_progress() {
  local extra
  extra=$(grep -Ev "$3" "$2" || true)
  if [ -n "$extra" ]; then
    echo "test-clients: $1 warns about openapi.yaml:" >&2
    sed 's/^/  /' <<< "$extra" >&2
    warnings_failed=1
  fi
}

# openapi-python-client and mypy, into a virtualenv of their own, every
# package pinned; ruff (a dependency) fixes and formats the generated code
# under the generated project's rules, as it does for a user who installed
# the generator the same way. The project is the generator's default one
# (poetry's pyproject.toml): without it (`--meta none`) ruff's default
# rules retype `__exit__`'s arguments and mypy --strict refuses client.py.
python3 -m venv "$OUT/opc-venv"
"$OUT/opc-venv/bin/pip" install -q --disable-pip-version-check -r tests/clients/openapi-python-client.txt
if ! PATH="$PWD/$OUT/opc-venv/bin:$PATH" openapi-python-client generate --path openapi.yaml \
  --config tests/clients/openapi-python-client.yaml --output-path "$OUT/opc" > "$OUT/opc.log" 2>&1; then
  cat "$OUT/opc.log" >&2
  echo "test-clients: openapi-python-client failed on openapi.yaml" >&2
  exit 1
fi
only_progress openapi-python-client "$OUT/opc.log" '^Generating '

# The TypeScript clients: openapi-generator's, and openapi-typescript's
# types of openapi.yaml for openapi-fetch.
cp tests/clients/story.ts tests/clients/story_fetch.mts tests/clients/tsconfig.json \
  tests/clients/package.json tests/clients/package-lock.json "$OUT/typescript/"
(cd "$OUT/typescript" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
if ! (cd "$OUT/typescript" && npx --no-install openapi-typescript ../../../openapi.yaml -o shelf-api.d.ts) \
  > "$OUT/openapi-typescript.log" 2>&1; then
  cat "$OUT/openapi-typescript.log" >&2
  echo "test-clients: openapi-typescript failed on openapi.yaml" >&2
  exit 1
fi
only_progress openapi-typescript "$OUT/openapi-typescript.log" '^(✨ openapi-typescript |🚀 .* → shelf-api\.d\.ts )'
if [ "$warnings_failed" = 1 ]; then
  exit 1
fi

# The openapi-generator Python client, into a virtualenv of its own, its
# dependencies pinned.
python3 -m venv "$OUT/venv"
"$OUT/venv/bin/pip" install -q --disable-pip-version-check -c tests/clients/constraints.txt "./$OUT/python"

# Type checks: both TypeScript stories with the clients they use, compiled
# with --strict; the openapi-python-client story and package with mypy
# --strict. The trap file must fail mypy with exactly the error it names
# (tests/clients/trap_opc.py says why).
(cd "$OUT/typescript" && npx --no-install tsc -p .)
cp tests/clients/story_opc.py tests/clients/trap_opc.py "$OUT/opc/"
(cd "$OUT/opc" && ../opc-venv/bin/mypy --strict --cache-dir ../mypy-cache story_opc.py shelf_client)
trap_expected='error: Argument "client" to "sync" has incompatible type "Client"; expected "AuthenticatedClient"  [arg-type]
Found 1 error in 1 file (checked 1 source file)'
trap_found=$(cd "$OUT/opc" && ../opc-venv/bin/mypy --strict --cache-dir ../mypy-cache trap_opc.py 2>&1 |
  sed -E 's/^trap_opc\.py:[0-9]+: //' || true)
if [ "$trap_found" != "$trap_expected" ]; then
  echo "test-clients: mypy on tests/clients/trap_opc.py: expected" >&2
  sed 's/^/  /' <<< "$trap_expected" >&2
  echo "found" >&2
  sed 's/^/  /' <<< "$trap_found" >&2
  exit 1
fi

# A server of this tree, on a keyspace of its own. Another server already
# on the port would answer the readiness check and the stories in its
# place (another checkout's make test-browser, say): refused up front.
if curl -fs "http://127.0.0.1:$PORT/readyz" >/dev/null 2>&1; then
  echo "test-clients: something already answers on 127.0.0.1:$PORT; set CLIENTS_PORT" >&2
  exit 1
fi
go build -o bin/api ./cmd/api
# Info level: the log mailer writes each mail (and its link) at info, where
# a story reads the link that verifies an address (CLIENTS_MAIL_LOG): a
# second factor takes a verified one.
export SHELF_KEYSPACE="${CLIENTS_KEYSPACE:-shelf_clients}" SHELF_HTTP_ADDR="127.0.0.1:$PORT" SHELF_LOG_LEVEL=info \
  SHELF_LOG_FLUSH_INTERVAL=0s SHELF_RATE_LIMIT_PER_MINUTE=0 SHELF_ARGON2_MEMORY_KIB=1024 SHELF_ARGON2_TIME=1
export CLIENTS_MAIL_LOG="$PWD/$OUT/api.log"
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
"$OUT/opc-venv/bin/python" "$OUT/opc/story_opc.py"
node "$OUT/typescript/out/story_fetch.mjs"
echo "test-clients: ok (openapi-generator $GENERATOR_VERSION: python, typescript-fetch;" \
  "openapi-python-client $("$OUT/opc-venv/bin/pip" show openapi-python-client | sed -n 's/^Version: //p'), $("$OUT/opc-venv/bin/mypy" --version | cut -d' ' -f1-2) --strict;" \
  "openapi-typescript $(node -p 'require("./'"$OUT"'/typescript/node_modules/openapi-typescript/package.json").version')" \
  "+ openapi-fetch $(node -p 'require("./'"$OUT"'/typescript/node_modules/openapi-fetch/package.json").version');" \
  "TypeScript $(cd "$OUT/typescript" && npx --no-install tsc --version | cut -d' ' -f2) --strict)"
