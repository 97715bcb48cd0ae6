#!/bin/sh
# Asks pip, without installing anything, on which Python versions the pinned
# set (constraints.txt, a freeze of a working install) resolves: a dry run of
# every pin for each version, `--no-deps` because the freeze lists them all.
# Needs the package index; run from the checkout with .venv installed:
#
#   sh tools/check_python_range.sh [VERSION ...]     (default 3.9 3.10 3.11 3.12)
#
# Prints one line per version, "3.11 ok" or "3.10 fails: <pip's reason>".
# tools/find_python.sh's range must be the versions that print "ok".
cd "$(dirname "$0")/.." || exit 2
pip=".venv/bin/python -m pip"
for version in ${*:-3.9 3.10 3.11 3.12}; do
  out=$($pip install --dry-run --ignore-installed --quiet --no-deps \
      --python-version "$version" --target "$(mktemp -d)" \
      -r constraints.txt 2>&1 | grep -v '^WARNING') 
  reason=$(echo "$out" | grep 'No matching distribution' | head -1)
  if [ -z "$out" ]; then
    echo "$version ok"
  else
    echo "$version fails: ${reason:-$out}"
  fi
done
