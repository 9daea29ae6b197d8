// Installs the SillyTavern the browser test drives, from the npm registry at the version pinned in
// st/package-lock.json, under target/sillytavern-VERSION/ (outside the source tree, kept between
// runs: a second run only checks the lock; each run's data root goes under its runs/ folder, see
// harness.js). `node install.js` does it from a shell (.ci/run); the test calls
// `installSillyTavern()` and gets the folder of SillyTavern's server.js.

import { execFileSync } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
export const VERSION = JSON.parse(readFileSync(join(here, "st/package.json"), "utf8")).dependencies.sillytavern;

export function installFolder() {
  return process.env.STATECRAFT_SILLYTAVERN_DIR || resolve(here, `../../../target/sillytavern-${VERSION}`);
}

/** The folder holding SillyTavern's server.js, installing it first when it is missing or stale. */
export function installSillyTavern({ log = () => {} } = {}) {
  const folder = installFolder();
  const lock = readFileSync(join(here, "st/package-lock.json"), "utf8");
  const marker = join(folder, ".installed-lock");
  const server = join(folder, "node_modules/sillytavern");
  if (!existsSync(marker) || readFileSync(marker, "utf8") !== lock || !existsSync(join(server, "server.js"))) {
    mkdirSync(folder, { recursive: true });
    copyFileSync(join(here, "st/package.json"), join(folder, "package.json"));
    copyFileSync(join(here, "st/package-lock.json"), join(folder, "package-lock.json"));
    log(`installing SillyTavern ${VERSION} from npm into ${folder}`);
    execFileSync("npm", ["ci", "--omit=dev", "--no-audit", "--no-fund", "--loglevel=error"], { cwd: folder, stdio: ["ignore", "inherit", "inherit"] });
    writeFileSync(marker, lock);
  }
  return server;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(installSillyTavern({ log: console.log }));
}
