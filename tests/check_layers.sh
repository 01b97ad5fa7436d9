#!/bin/bash
# check_layers.sh SOURCE_DIR LIBGPUFEED.a: runs check_layers.py (the rules
# are written there) on the sources and on the built static library.
# Exit 0 pass, 1 fail, 77 skip.
set -u
if [ $# -ne 2 ]; then
  echo "usage: check_layers.sh SOURCE_DIR LIBGPUFEED.a" >&2
  exit 1
fi
if [ ! -x /usr/bin/python3 ] || ! command -v nm >/dev/null; then
  echo "SKIP: needs /usr/bin/python3 and nm"
  exit 77
fi
if [ ! -f "$2" ]; then
  echo "FAIL: no static library at $2"
  exit 1
fi
/usr/bin/python3 "$(dirname "$0")/check_layers.py" "$1" "$2" || exit 1
