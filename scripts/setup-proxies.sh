#!/usr/bin/env bash
# Installs the real proxies the proxy tests run on loopback: Debian's squid (HTTP CONNECT,
# basic auth, TLS listener) and microsocks (SOCKS5). Idempotent: does nothing when both are
# there. The tests start their own instances with generated configs on free 127.0.0.1 ports;
# the system-wide squid service is never started (policy-rc.d during the install).
set -euo pipefail

missing=()
command -v squid >/dev/null 2>&1 || [ -x /usr/sbin/squid ] || missing+=(squid)
command -v microsocks >/dev/null 2>&1 || missing+=(microsocks)
[ ${#missing[@]} -eq 0 ] && exit 0

sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
echo "setup: installing Debian's ${missing[*]}" >&2
# Debian starts a package's service on install unless policy-rc.d says no (exit 101).
policy=/usr/sbin/policy-rc.d
made_policy=""
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | $sudo_cmd tee "$policy" >/dev/null
  $sudo_cmd chmod 755 "$policy"
  made_policy=1
fi
cleanup() { [ -n "$made_policy" ] && $sudo_cmd rm -f "$policy"; return 0; }
trap cleanup EXIT
$sudo_cmd apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >&2 \
  || { echo "setup: step 'install ${missing[*]}' failed: install Debian's squid and microsocks packages" >&2; exit 1; }
