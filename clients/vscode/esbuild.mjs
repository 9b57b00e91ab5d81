// Bundles the extension host code (CommonJS for Node) and the webview pages (IIFEs for the browser).
import { build } from "esbuild";

const production = !process.argv.includes("--dev");
const common = { bundle: true, minify: production, sourcemap: !production, logLevel: "warning" };

await Promise.all([
  build({
    ...common,
    entryPoints: ["src/extension.ts"],
    outfile: "dist/extension.js",
    platform: "node",
    format: "cjs",
    target: "node20",
    external: ["vscode"],
  }),
  build({
    ...common,
    entryPoints: ["src/webview/main.ts"],
    outfile: "dist/webview.js",
    platform: "browser",
    format: "iife",
    target: "chrome120",
  }),
  // The preview panel's page (it carries pdf.js, so the chat's page stays small).
  build({
    ...common,
    entryPoints: ["src/webview/preview.ts"],
    outfile: "dist/preview.js",
    platform: "browser",
    format: "iife",
    target: "chrome120",
  }),
]);
