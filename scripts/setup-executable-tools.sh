#!/usr/bin/env bash
# What scripts/build-executable.sh needs beyond Node and Go, from Debian, when missing:
# zstd (compresses the payload) and binutils (strip). dpkg, ldd and tar come with every
# Debian system. Idempotent: nothing happens when they are there.
set -euo pipefail
missing=()
command -v zstd >/dev/null 2>&1 || missing+=(zstd)
command -v strip >/dev/null 2>&1 || missing+=(binutils)
[ "${#missing[@]}" -eq 0 ] && exit 0
echo "setup: installing Debian's ${missing[*]}" >&2
sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
$sudo_cmd apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >&2 \
  || { echo "setup: step 'install ${missing[*]}' failed: install Debian's ${missing[*]}" >&2; exit 1; }
