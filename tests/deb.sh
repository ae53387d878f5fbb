#!/bin/sh
# deb.sh - builds the Debian packages from a copy of the tracked files
# (git ls-files, untracked ones not ignored too, or every file when this is no git checkout) in
# $BUILD/deb/logcounter-VERSION, and leaves the .deb files in $BUILD/deb/.
# Prints their paths.
set -eu
cd "$(dirname "$0")/.."
B=${BUILD:-build}
v=$(sed -n 's/^#define LC_VERSION_STRING "\(.*\)"/\1/p' include/logcounter.h)
d=$B/deb
rm -rf "$d"
mkdir -p "$d/logcounter-$v"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git ls-files -z --cached --others --exclude-standard |
    xargs -0 cp --parents -t "$d/logcounter-$v"
else
  tar --exclude="./$B" --exclude='./build*' -cf - . | tar -xf - -C "$d/logcounter-$v"
fi
(cd "$d/logcounter-$v" && dpkg-buildpackage -us -uc -b >../build.log 2>&1) || {
  tail -n 40 "$d/build.log" >&2
  echo "deb.sh: dpkg-buildpackage failed ($d/build.log)" >&2
  exit 1
}
ls "$d"/*.deb
