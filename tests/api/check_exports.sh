#!/bin/sh
# The shared library exports exactly the functions gpk.h declares with GPK_API: every one of them, and
# nothing else (the version node GPK_0 is not a symbol).
lib="$1"
header="$2"
command -v nm >/dev/null || { echo "SKIP: nm not found"; exit 77; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
nm -D --defined-only "$lib" | awk '$2 != "A" {sub(/@.*/, "", $3); print $3}' | sort -u >"$tmp/exported"
tr '\n' ' ' <"$header" | grep -o 'GPK_API [^;(]*(' | grep -o 'gpk_[a-z0-9_]*($' | tr -d '(' | sort -u >"$tmp/declared"
[ -s "$tmp/declared" ] || { echo "no GPK_API declarations found in $header"; exit 1; }
extra=$(comm -23 "$tmp/exported" "$tmp/declared")
missing=$(comm -13 "$tmp/exported" "$tmp/declared")
[ -z "$extra" ] || { echo "exported but not in gpk.h:"; echo "$extra"; }
[ -z "$missing" ] || { echo "declared in gpk.h but not exported:"; echo "$missing"; }
[ -z "$extra$missing" ] || exit 1
echo "exports ok: $(wc -l <"$tmp/declared") gpk_* functions, nothing else"
