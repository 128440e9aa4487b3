// Builds the KernelWeb front-end bundle into static/dist/ (run by `npm run build`, i.e. `make static/dist/.built`).
// Each entry point becomes one self-contained, minified IIFE script; pages include only the ones they use.
import { copyFileSync, mkdirSync, statSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const out = join(root, "static", "dist");
mkdirSync(out, { recursive: true });

const entries = {
  "kw-editor": "frontend/editor.js",
  "kw-charts": "frontend/charts.js",
  "kw-htmx": "frontend/htmx.js",
};

await Promise.all(
  Object.entries(entries).map(([name, entry]) =>
    esbuild.build({
      absWorkingDir: root,
      entryPoints: [entry],
      outfile: join(out, `${name}.js`),
      bundle: true,
      minify: true,
      format: "iife",
      target: "es2020",
      legalComments: "none",
      logLevel: "warning",
    }),
  ),
);
copyFileSync(join(root, "node_modules", "uplot", "dist", "uPlot.min.css"), join(out, "uPlot.min.css"));

for (const name of [...Object.keys(entries).map((n) => `${n}.js`), "uPlot.min.css"]) {
  console.log(`static/dist/${name.padEnd(16)} ${(statSync(join(out, name)).size / 1024).toFixed(1)} KiB`);
}
