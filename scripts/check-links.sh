#!/usr/bin/env bash
# Checks that every relative link in README.md and docs/ (Markdown
# [text](target), the part before any #anchor) and every docs/*.md path a
# source comment names resolves to a file of the checkout.  One check per
# file; ends with "N passed, N failed" like the other suites.
set -uo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo" || exit 1
passed=0
failed=0

for f in README.md docs/*.md docs/design/*.md; do
  bad=0
  dir=$(dirname "$f")
  while IFS= read -r target; do
    path=${target%%#*}
    [ -z "$path" ] && continue
    case "$path" in http://*|https://*|mailto:*) continue ;; esac
    if [ ! -e "$dir/$path" ]; then
      echo "links: $f links to $target, which does not exist"
      bad=1
    fi
  done < <(grep -o '](\([^)]*\))' "$f" | sed 's/^](\(.*\))$/\1/')
  if [ "$bad" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done

bad=0
while IFS= read -r ref; do
  file=${ref#*:}
  if [ ! -e "$file" ]; then
    echo "links: ${ref%%:*} names $file, which does not exist"
    bad=1
  fi
done < <(git grep -o -E 'docs/[A-Za-z0-9_/.-]+\.md' -- '*.c' '*.h' '*.pl' '*.pm' '*.sh' '*.sql' Makefile | sort -u)
if [ "$bad" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
