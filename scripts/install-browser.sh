#!/bin/sh
# The site tests drive Debian's Chromium (never a downloaded browser build).
# Installs it with apt when /usr/bin/chromium is missing; uses sudo when not root.
set -e
[ -x /usr/bin/chromium ] && exit 0
if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium fonts-dejavu-core >/dev/null
