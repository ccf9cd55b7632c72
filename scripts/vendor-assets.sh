#!/usr/bin/env bash
# Refresh the front-end libraries the gateway serves itself (the /docs viewer, the dashboard)
# from the npm registry. Each package is pinned to a version and its registry integrity hash;
# only the files the gateway serves are copied into src/unigate/web/vendor/<package>/, with
# the package's licence. The copies are committed, so neither Node nor a CDN is needed at run
# time; run this only to change a version (then update the pin and its hash below).
set -euo pipefail
cd "$(dirname "$0")/.."
dest=src/unigate/web/vendor
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

# name  version  integrity  files (inside the package, space separated)
fetch() {
    local name="$1" version="$2" integrity="$3"; shift 3
    local tgz
    tgz="$(cd "$work" && npm pack --silent "$name@$version")"
    local got
    got="sha512-$(openssl dgst -sha512 -binary "$work/$tgz" | base64 -w0)"
    if [ "$got" != "$integrity" ]; then
        echo "error: $name@$version integrity mismatch ($got)" >&2
        exit 1
    fi
    mkdir -p "$work/$name" && tar xzf "$work/$tgz" -C "$work/$name"
    local out="$dest/$name"
    rm -rf "$out" && mkdir -p "$out"
    for f in "$@" LICENSE LICENSE.md; do
        [ -f "$work/$name/package/$f" ] && cp "$work/$name/package/$f" "$out/$(basename "$f")"
    done
    echo "$name@$version" > "$out/VERSION"
    echo "vendored $name@$version"
}

# Registry integrity hashes (`npm view <name>@<version> dist.integrity`); not secrets.
swagger_ui='sha512-U06rpMtW9V3XPGOBeamTUSr0Z09jMX4IJuANpE/EZbAhw0G8CgwrzU4YmXkn/h0wCDNsXdGarTNNHC3sU8yVUQ=='  # pragma: allowlist secret
preact='sha512-/HfHI/7N84e6GrWBJ3J280z3mLaRJiDcSvj/A+y/4AbLnND/1UlGHe1sR6oYuTGwId0nP7dqDU9OnLxMPZ7xBg=='  # pragma: allowlist secret
htm='sha512-983Vyg8NwUE7JkZ6NmOqpCZ+sh1bKv2iYTlUkzlWmA5JD2acKoxd4KVxbMmxX/85mtfdnDmTFoNKcg5DGAvxNQ=='  # pragma: allowlist secret
chartjs='sha512-hJyniucsFmq//EvXYvJ6c6mahPoI3kaxdjVH8awTaJ/fDNWeSqqqArixMJWkWNN6fcYvPU3HneSANFNYtRi61g=='  # pragma: allowlist secret

fetch swagger-ui-dist 5.35.0 "$swagger_ui" swagger-ui-bundle.js swagger-ui.css
# The dashboard: Preact and htm as ES modules (no build step), Chart.js as its UMD build (its
# ES module build imports a bare specifier, which a browser resolves only through an import map).
fetch preact 11.2.0 "$preact" dist/preact.mjs
fetch htm 3.1.1 "$htm" dist/htm.mjs
fetch chart.js 4.6.1 "$chartjs" dist/chart.umd.min.js
