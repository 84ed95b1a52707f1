#!/usr/bin/env bash
# Install the pinned MCP Inspector (used by tests/server/test_inspector.py) into a local cache dir,
# so the tests run its binary directly instead of fetching it through npx on every run.
#
#   .ci/install-inspector.sh            # installs into $CHRONOMEM_INSPECTOR_DIR or .ci/node
#   CHRONOMEM_INSPECTOR_DIR=/some/dir .ci/install-inspector.sh
#
# The binary then lives at "$DIR/node_modules/.bin/mcp-inspector". Keep VERSION in step with
# INSPECTOR_VERSION in tests/server/test_inspector.py.
set -euo pipefail

VERSION="2.12.0"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR="${CHRONOMEM_INSPECTOR_DIR:-$HERE/node}"

MANIFEST="$DIR/node_modules/@modelcontextprotocol/inspector/package.json"
if [ -x "$DIR/node_modules/.bin/mcp-inspector" ] && grep -q "\"version\": \"$VERSION\"" "$MANIFEST" 2>/dev/null; then
    echo "mcp-inspector $VERSION already installed in $DIR"
    exit 0
fi

mkdir -p "$DIR"
npm install --prefix "$DIR" --no-audit --no-fund --save-exact "@modelcontextprotocol/inspector@$VERSION"
echo "installed mcp-inspector $VERSION in $DIR"
