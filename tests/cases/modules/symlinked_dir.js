// One file is one module, whatever path reaches it (here through a symlinked directory).
const a = await import("./lib/counter.mjs");
const b = await import("./linked/counter.mjs");
return [a === b, a.next(), b.next()];
