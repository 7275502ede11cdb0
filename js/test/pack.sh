#!/bin/sh
# js.pack: the built package installs as a consumer installs it. `npm pack` of PKG (the build
# folder's js/) holds package.json, README.md and dist/ (every .js with its .d.ts) and nothing
# else; the tarball installs offline into a fresh project (no dependencies to fetch), where
# `import('@airlock/client')` gives the client, the executor and the codec.
#   pack.sh NPM NODE PKG
set -eu
npm=$1 node=$2 pkg=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
"$npm" pack "$pkg" --pack-destination "$tmp" --json --loglevel=error > pack.json
"$node" -e '
const [info] = JSON.parse(require("fs").readFileSync("pack.json", "utf8"));
const files = info.files.map((f) => f.path).sort();
const js = files.filter((f) => /^dist\/[a-z]+\.js$/.test(f));
const want = ["README.md", "package.json", ...js, ...js.map((f) => f.replace(/\.js$/, ".d.ts"))].sort();
if (JSON.stringify(files) !== JSON.stringify(want) || js.length < 5) {
    console.error("the tarball holds", files, "not", want);
    process.exit(1);
}
if (info.name !== "@airlock/client") {
    console.error("the package is", info.name);
    process.exit(1);
}
console.log(info.filename, files.length, "files");
'
mkdir app
cd app
printf '{"name":"app","private":true,"type":"module"}\n' > package.json
"$npm" install --offline --no-audit --no-fund --loglevel=error "$tmp"/airlock-client-*.tgz
"$node" --input-type=module -e '
const m = await import("@airlock/client");
for (const name of ["Client", "AirlockError", "createExecutor", "decode", "encode"]) {
    if (typeof m[name] !== "function") {
        throw new Error("@airlock/client has no " + name);
    }
}
const c = new m.Client("http://127.0.0.1:1", "ak_x");
if (!(c.runs && typeof c.runs.start === "function")) {
    throw new Error("no runs.start");
}
if (m.decode("{\"$type\":\"bigint\",\"value\":\"7\"}") !== 7n) {
    throw new Error("decode");
}
console.log("installed and imported");
'
