# throwaway.sh is sourced by test.sh and bench.sh: it starts a Postgres and
# a Redis of their own in a temporary folder, exports DATABASE_URL and
# REDIS_URL, and stops and removes them when the sourcing script exits,
# whether it passed or failed.
throwaway_dir=$(mktemp -d "${TMPDIR:-/tmp}/bobnet-services.XXXXXX")
throwaway_cleanup() {
	scripts/services.sh stop "$throwaway_dir" || true
	rm -rf "$throwaway_dir"
}
trap throwaway_cleanup EXIT
# Throwaway data needs no append-only file.
eval "$(BOBNET_REDIS_MEMORY_ONLY=1 scripts/services.sh start "$throwaway_dir")"
export DATABASE_URL REDIS_URL
