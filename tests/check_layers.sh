#!/bin/bash
# check_layers.sh SOURCE_DIR 'a.o;b.o;...': runs check_layers.py (the rules
# are written there) on the sources and on the library's object files.
# Exit 0 pass, 1 fail, 77 skip.
set -u
if [ $# -ne 2 ]; then
  echo "usage: check_layers.sh SOURCE_DIR 'OBJECT;OBJECT;...'" >&2
  exit 1
fi
if [ ! -x /usr/bin/python3 ] || ! command -v nm >/dev/null; then
  echo "SKIP: needs /usr/bin/python3 and nm"
  exit 77
fi
IFS=';' read -r -a objs <<< "$2"
for o in "${objs[@]}"; do
  if [ ! -f "$o" ]; then
    echo "FAIL: no object file $o (build the library first)"
    exit 1
  fi
done
/usr/bin/python3 "$(dirname "$0")/check_layers.py" "$1" "$2" || exit 1
