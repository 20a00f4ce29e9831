#!/usr/bin/env bash
# redocly.sh prints the path of the Redocly CLI pinned in package-lock.json
# beside it, installed with npm ci into a cache folder the first time (and
# again when the lock changes), so the repository holds no node_modules.
# make test lints httpapi/openapi.json with it (TestOpenAPILintsClean).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if ! command -v npm >/dev/null 2>&1; then
	if [ "$(id -u)" = 0 ]; then
		echo "redocly: installing nodejs and npm from Debian's packages" >&2
		DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >&2
	else
		echo "redocly: npm is missing; install it with: sudo apt-get install -y nodejs npm" >&2
		exit 1
	fi
fi
sum=$(cat "$here/package.json" "$here/package-lock.json" | cksum | cut -d' ' -f1)
dir="${XDG_CACHE_HOME:-$HOME/.cache}/bobnet/redocly-$sum"
if [ ! -x "$dir/node_modules/.bin/redocly" ]; then
	echo "redocly: installing the Redocly CLI pinned in $here/package-lock.json (once; cached in $dir)" >&2
	mkdir -p "$dir"
	cp "$here/package.json" "$here/package-lock.json" "$dir/"
	(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error) >&2
fi
echo "$dir/node_modules/.bin/redocly"
