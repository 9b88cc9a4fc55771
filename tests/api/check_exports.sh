#!/bin/sh
# The shared library exports exactly the functions its headers declare with the export macro (GPK_API
# for gpk.h): every one of them, and nothing else (version nodes are not symbols). With a third argument,
# the internal header (lib/gpk_internal.h): its functions are exported too, all in the version node
# GPK_INTERNAL_<version> and none in the public one.
# Usage: check_exports.sh LIBRARY HEADER [INTERNAL_HEADER] [MACRO]
lib="$1"
header="$2"
internal="${3:-}"
macro="${4:-GPK_API}"
command -v nm >/dev/null || { echo "SKIP: nm not found"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '$2 != "A" {print $3}' | sort -u >"$tmp/versioned"
sed 's/@.*//' "$tmp/versioned" | sort -u >"$tmp/exported"
declared() { tr '\n' ' ' <"$1" | grep -o "$macro [^;(]*(" | grep -o 'gpk_[a-z0-9_]*($' | tr -d '(' | sort -u; }
declared "$header" >"$tmp/declared"
[ -s "$tmp/declared" ] || { echo "no $macro declarations found in $header"; exit 1; }
if [ -n "$internal" ]; then
  declared "$internal" >"$tmp/internal"
  [ -s "$tmp/internal" ] || { echo "no $macro declarations found in $internal"; exit 1; }
  misplaced=$(grep '^gpk_internal_' "$tmp/versioned" | grep -v '@@GPK_INTERNAL_')
  [ -z "$misplaced" ] || { echo "internal symbols outside GPK_INTERNAL_*:"; echo "$misplaced"; exit 1; }
  sort -u "$tmp/declared" "$tmp/internal" -o "$tmp/declared"
fi
extra=$(comm -23 "$tmp/exported" "$tmp/declared")
missing=$(comm -13 "$tmp/exported" "$tmp/declared")
[ -z "$extra" ] || { echo "exported but not declared:"; echo "$extra"; }
[ -z "$missing" ] || { echo "declared but not exported:"; echo "$missing"; }
[ -z "$extra$missing" ] || exit 1
echo "exports ok: $(wc -l <"$tmp/declared") functions, nothing else"
