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
    for f in "$@" LICENSE; do
        [ -f "$work/$name/package/$f" ] && cp "$work/$name/package/$f" "$out/$(basename "$f")"
    done
    echo "$name@$version" > "$out/VERSION"
    echo "vendored $name@$version"
}

fetch swagger-ui-dist 5.35.0 \
    'sha512-U06rpMtW9V3XPGOBeamTUSr0Z09jMX4IJuANpE/EZbAhw0G8CgwrzU4YmXkn/h0wCDNsXdGarTNNHC3sU8yVUQ==' \
    swagger-ui-bundle.js swagger-ui.css
