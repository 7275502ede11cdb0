// A function body imports on demand; the same module twice is the same namespace object.
const m1 = await import("./lib/util.mjs");
const m2 = await import("/lib/util.mjs");
return [m1.double(5), m1 === m2, Object.keys(m1).sort()];
