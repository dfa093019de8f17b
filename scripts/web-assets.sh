#!/usr/bin/env bash
# make web-assets: fetch Swagger UI (the /docs renderer), playwright-core
# (the browser test's driver) and axe-core (its accessibility checker)
# from npm into the ignored .cache/npm, and copy
# Swagger UI's bundle and stylesheet into handlers/web/vendor/ (ignored) to
# be embedded in the binary. Without npm it says so and leaves /docs showing how to get them.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v npm >/dev/null 2>&1; then
  echo "web-assets: npm not found; /docs will explain how to add its renderer (install Node.js and npm, then make web-assets)" >&2
  exit 0
fi
mkdir -p .cache/npm handlers/web/vendor
ui=.cache/npm/node_modules/swagger-ui-dist
if [ ! -f "$ui/swagger-ui-bundle.js" ] || [ ! -d .cache/npm/node_modules/playwright-core ] || [ ! -f .cache/npm/node_modules/axe-core/axe.min.js ]; then
  echo "web-assets: fetching Swagger UI (for /docs), playwright-core and axe-core from npm into .cache/npm (once)"
  (cd .cache/npm && npm install --no-audit --no-fund --loglevel=error swagger-ui-dist@5.35.0 playwright-core@1.64.1 axe-core@4.14.1)
fi
cp "$ui/swagger-ui-bundle.js" "$ui/swagger-ui.css" handlers/web/vendor/
