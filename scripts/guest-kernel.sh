#!/usr/bin/env bash
# Prints the version of Debian's kernel that the guest boots and our module
# builds against: the one linux-image-amd64 depends on, with matching headers.
set -euo pipefail
kver=$(dpkg-query -W -f='${Depends}' linux-image-amd64 | grep -o 'linux-image-[^ ,]*' | head -n 1)
kver=${kver#linux-image-}
for f in "/boot/vmlinuz-$kver" "/lib/modules/$kver/build/Makefile"; do
	[ -e "$f" ] || { echo "guest-kernel: $f missing (run scripts/setup-host.sh)" >&2; exit 1; }
done
echo "$kver"
