#!/usr/bin/env bash
# check.sh fails when git tracks a build output: an executable binary (ELF, Mach-O, PE or
# WebAssembly by its first bytes, or a file marked executable that is not a #! script), or a
# file over 1 MiB outside the vendored page assets (playground/vendor, reference/vendor). A
# clone carries every tracked file forever: binaries are built, not committed (.gitignore).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"

limit=$((1 << 20))
status=0
while IFS= read -r -d '' entry; do
  mode=${entry%% *}
  f=${entry#*$'\t'}
  [ -f "$f" ] || continue # deleted in the work tree
  magic=$(head -c 4 -- "$f" | od -An -tx1 | tr -d ' \n')
  case "$magic" in
  7f454c46 | cffaedfe | cefaedfe | feedface | feedfacf | 0061736d | 4d5a*)
    echo "tracked binary executable: $f" >&2
    status=1
    continue
    ;;
  esac
  if [ "$mode" = 100755 ] && [ "$(head -c 2 -- "$f")" != '#!' ]; then
    echo "tracked as executable but not a #! script: $f" >&2
    status=1
  fi
  case "$f" in
  playground/vendor/* | reference/vendor/*) continue ;;
  esac
  size=$(stat -c %s -- "$f")
  if [ "$size" -gt "$limit" ]; then
    echo "tracked file over 1 MiB ($size bytes): $f" >&2
    status=1
  fi
done < <(git ls-files -s -z | sed -z 's/^\([0-9]*\) [0-9a-f]* [0-9]*\t/\1 \t/')
[ "$status" -eq 0 ] && echo "tracked files: no build outputs, none over 1 MiB outside the vendored assets"
exit "$status"
