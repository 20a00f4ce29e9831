#!/usr/bin/env bash
# helm.sh prints the path of helm's CLI, built from helm's own Go module at
# a pinned version and cached under ~/.cache, building it the first time.
# It is built outside BobNet's module, so go.mod and go.sum never see it.
set -euo pipefail
version=v3.22.0
bin="${XDG_CACHE_HOME:-$HOME/.cache}/bobnet/helm-$version"
if [ ! -x "$bin/helm" ]; then
	echo "helm: building helm $version (once; cached in $bin)" >&2
	mkdir -p "$bin"
	(cd "${TMPDIR:-/tmp}" && GOBIN="$bin" GOFLAGS=-mod=mod go install "helm.sh/helm/v3/cmd/helm@$version") >&2
fi
echo "$bin/helm"
