#!/bin/sh
# Prints the absolute path of a Python interpreter that the project's pinned
# wheels support, for `make install` to build .venv with.
#
#   tools/find_python.sh            tries python3.11, then python3
#   tools/find_python.sh PYTHON     tries PYTHON only (a name on PATH or a path)
#
# The range is where every pin of constraints.txt has a release: TensorFlow
# 2.14.1 (pinned by TFF 0.87) has wheels for CPython 3.9-3.11, but the freeze
# also pins packages that need 3.10+ (cffi 2.1.1) or 3.11+ (contourpy 1.3.3),
# and jaxlib 0.4.13 has no 3.12 wheel, so the pinned set resolves on 3.11 only
# (`tools/check_python_range.sh` asks pip, README "Install"). An interpreter
# without the venv module (Debian's python3.X without python3.X-venv) is not
# usable either.
#
# If none is usable, prints one line naming what was found, what is needed and
# how to get it, and exits 2.
MIN_MINOR=11
MAX_MINOR=11

if [ -n "$1" ]; then
  candidates=$1
else
  candidates="python3.11 python3"
fi

found=""
for name in $candidates; do
  path=$(command -v "$name" 2>/dev/null) || {
    found="$found, $name: not found"
    continue
  }
  # Prints e.g. "3.12 venv" (or "3.11 novenv"); fails for a broken interpreter
  # or a pyenv shim of a version that is not installed.
  probe=$("$path" -c 'import importlib.util as u, sys
print("%d.%d" % sys.version_info[:2],
      "venv" if u.find_spec("venv") and u.find_spec("ensurepip") else "novenv")' 2>/dev/null) || {
    found="$found, $name: does not run"
    continue
  }
  version=${probe% *}
  major=${version%%.*}
  minor=${version#*.}
  if [ "$major" = 3 ] && [ "$minor" -ge $MIN_MINOR ] && [ "$minor" -le $MAX_MINOR ]; then
    if [ "${probe#* }" = venv ]; then
      # Absolute, so that the choice does not depend on the directory.
      case $path in
        /*) echo "$path" ;;
        *) echo "$(cd "$(dirname "$path")" && pwd)/$(basename "$path")" ;;
      esac
      exit 0
    fi
    found="$found, $name: $version without the venv module (install python$version-venv)"
  else
    found="$found, $name: $version"
  fi
done

echo "no usable Python for .venv (${found#, }): the pinned packages (constraints.txt: TensorFlow 2.14.1, TFF 0.87) need Python 3.$MAX_MINOR; install one (your distribution's python3.11 and python3.11-venv packages, 'pyenv install 3.11', or 'uv python install 3.11') and re-run, or pass PYTHON=/path/to/python3.11"
exit 2
