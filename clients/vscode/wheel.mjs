// Builds the daemon's wheel into dist/daemon/, so the .vsix can install it without the package
// index holding turnstoned (its dependencies still come from there). Run by `vscode:prepublish`.
// Without Python or setuptools the .vsix is still built: its install then asks pip for
// `turnstoned` by name. TURNSTONED_REQUIRE_WHEEL=1 (ci.sh) makes that a failure instead.
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, "../..");
const out = path.join(here, "dist", "daemon");
fs.rmSync(out, { recursive: true, force: true });
const result = spawnSync(process.env.PYTHON ?? "python3", ["-m", "pip", "wheel", "--no-deps", "--quiet", "--disable-pip-version-check", repo, "-w", out], { stdio: "inherit" });
const wheels = fs.existsSync(out) ? fs.readdirSync(out).filter((f) => f.endsWith(".whl")) : [];
if (result.status !== 0 || wheels.length !== 1) {
  const why = result.error ? result.error.message : `pip wheel exited with ${result.status}`;
  if (process.env.TURNSTONED_REQUIRE_WHEEL === "1") {
    console.error(`wheel.mjs: no daemon wheel (${why})`);
    process.exit(1);
  }
  console.warn(`wheel.mjs: no daemon wheel (${why}); the .vsix will install turnstoned from the package index`);
  fs.rmSync(out, { recursive: true, force: true });
} else {
  console.log(`wheel.mjs: dist/daemon/${wheels[0]}`);
}
