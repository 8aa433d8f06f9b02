// Loads every subpath of the built package with require(), as a CommonJS consumer on Node >= 20.19
// does (require(esm)), and prints what each one exports. Run by test/package-exports.test.ts.
'use strict';

const loaded = {};
for (const specifier of process.argv.slice(2)) {
  try {
    loaded[specifier] = { exports: Object.keys(require(specifier)).sort() };
  } catch (error) {
    loaded[specifier] = { error: `${error.code ?? error.name}: ${error.message.split('\n')[0]}` };
  }
}
process.stdout.write(JSON.stringify(loaded));
