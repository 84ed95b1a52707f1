#!/usr/bin/env bash
# Install the pinned Claude Code CLI (used by tests/test_install_claude.py) into a local cache dir, from the
# npm registry. The package's native binary comes in its platform package (an optional dependency), so no
# other download happens. No API key is needed: the test only runs `claude mcp list` / `claude mcp get`.
#
#   .ci/install-claude-code.sh            # installs into $CHRONOMEM_CLAUDE_DIR or .ci/claude-code
#   CHRONOMEM_CLAUDE_DIR=/some/dir .ci/install-claude-code.sh
#
# The binary then lives at "$DIR/node_modules/.bin/claude". Keep VERSION in step with
# CLAUDE_CODE_VERSION in tests/test_install_claude.py.
set -euo pipefail

VERSION="2.1.330"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
DIR="${CHRONOMEM_CLAUDE_DIR:-$HERE/claude-code}"
BIN="$DIR/node_modules/.bin/claude"

installed_version() {
    DISABLE_AUTOUPDATER=1 "$BIN" --version 2>/dev/null | awk '{print $1}'
}

if [ -x "$BIN" ] && [ "$(installed_version)" = "$VERSION" ]; then
    echo "claude-code $VERSION already installed in $DIR"
    exit 0
fi

mkdir -p "$DIR"
npm install --prefix "$DIR" --no-audit --no-fund --save-exact --loglevel=error "@anthropic-ai/claude-code@$VERSION"
if [ "$(installed_version)" != "$VERSION" ]; then
    echo "claude-code $VERSION did not install a working binary in $DIR (its native package may be missing for this platform)" >&2
    exit 1
fi
echo "installed claude-code $VERSION in $DIR"
