#!/usr/bin/env bash
# Install code-server 4.100.3 (VS Code 1.100.3) into $1 without its postinstall, which would
# download prebuilt binaries: native modules are compiled with node-gyp against the system
# Node headers and Debian's ripgrep stands in for @vscode/ripgrep's download.
# Prints the path of code-server's entry.js. Reuses a finished install.
set -euo pipefail
dir=${1:?usage: install-code-server.sh CACHE_DIR}
version=4.100.3
root="$dir/code-server-$version"
entry="$root/node_modules/code-server/out/node/entry.js"
if [[ -f "$root/.installed" ]]; then echo "$entry"; exit 0; fi

need() { command -v "$1" >/dev/null 2>&1; }
if ! need rg || ! [[ -e /usr/include/krb5.h || -e /usr/include/krb5/krb5.h ]] || ! need make || ! need g++; then
    apt-get update -qq && apt-get install -y -qq ripgrep libkrb5-dev build-essential python3 >/dev/null
fi

rm -rf "$root" && mkdir -p "$root"
cd "$root"
echo '{"name":"code-server-host","private":true}' > package.json
npm install --no-audit --no-fund --ignore-scripts "code-server@$version" >&2
cs="$root/node_modules/code-server"
(cd "$cs/lib/vscode" && npm install --no-audit --no-fund --omit=dev --ignore-scripts >&2)
(cd "$cs/lib/vscode/extensions" && npm install --no-audit --no-fund --omit=dev --ignore-scripts >&2)

gyp="$(dirname "$(command -v npm)")/../lib/node_modules/npm/node_modules/node-gyp/bin/node-gyp.js"
[[ -f "$gyp" ]] || gyp="$(npm root -g)/npm/node_modules/node-gyp/bin/node-gyp.js"
nodedir=/usr
[[ -f /usr/include/node/node.h ]] || nodedir="$(dirname "$(dirname "$(readlink -f "$(command -v node)")")")"
mods="$cs/lib/vscode/node_modules"
for m in node-pty @vscode/spdlog kerberos native-watchdog @vscode/deviceid @parcel/watcher; do
    [[ -d "$mods/$m" ]] || continue
    (cd "$mods/$m" && node "$gyp" rebuild --nodedir="$nodedir" >&2)
done
for a in "$root/node_modules/argon2" "$cs/node_modules/argon2" "$mods/argon2"; do
    [[ -d "$a" ]] || continue
    (cd "$a" && node "$gyp" rebuild --nodedir="$nodedir" --module_name=argon2 \
        --module_path="$PWD/lib/binding/napi-v3" --napi_build_version=3 >&2)
done
for rgdir in "$mods/@vscode/ripgrep"; do
    mkdir -p "$rgdir/bin" && cp "$(command -v rg)" "$rgdir/bin/rg"
done
ln -sfn node_modules "$cs/lib/vscode/node_modules.asar"
ln -sfn code-linux.sh "$cs/lib/vscode/bin/remote-cli/code-server"
ln -sfn browser-linux.sh "$cs/lib/vscode/bin/helpers/browser.sh"
touch "$root/.installed"
echo "$entry"
