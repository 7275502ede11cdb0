// Messages name the expression in a loaded module too (sites are kept per file): this
// position in run.js is not mistaken for one in names.mjs.
const m = await import("./names.mjs");
try { m.port({}); } catch (e) { return [e.message, e.stack.includes("names.mjs:3")]; }
