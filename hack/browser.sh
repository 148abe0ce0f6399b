#!/usr/bin/env bash
# Installs headless Chromium (Debian's chromium package) when it is missing,
# so that cmd/loadgen's TestHTMLInBrowser renders the HTML report instead of
# skipping. Best effort: without root and apt-get, or when the package cannot
# be fetched, it says so and exits 0 (the test then skips with its reason).
set -uo pipefail

for b in /usr/bin/chromium /usr/bin/chromium-browser /usr/bin/google-chrome; do
	if [[ -x "$b" ]]; then
		echo "browser: $b"
		exit 0
	fi
done
if ! command -v apt-get > /dev/null; then
	echo "browser: no Chromium and no apt-get; TestHTMLInBrowser will skip"
	exit 0
fi
sudo=()
if [[ "$(id -u)" != 0 ]]; then
	if ! sudo -n true 2> /dev/null; then
		echo "browser: no Chromium, and apt-get needs root; TestHTMLInBrowser will skip"
		exit 0
	fi
	sudo=(sudo -n)
fi
echo "browser: installing Debian's chromium for TestHTMLInBrowser"
export DEBIAN_FRONTEND=noninteractive
log="$(mktemp)"
if timeout 300 "${sudo[@]}" apt-get install -y -q --no-install-recommends chromium > "$log" 2>&1 ||
	{ timeout 120 "${sudo[@]}" apt-get update -q >> "$log" 2>&1 &&
		timeout 300 "${sudo[@]}" apt-get install -y -q --no-install-recommends chromium >> "$log" 2>&1; }; then
	echo "browser: installed /usr/bin/chromium"
else
	echo "browser: installing chromium failed (last lines below); TestHTMLInBrowser will skip"
	tail -5 "$log"
fi
rm -f "$log"
exit 0
