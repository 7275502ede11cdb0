// A missing module: a clear error naming the module by its name in the root, never a host path.
try { await import("./nope.mjs"); } catch (e) { return [e.name, e.message]; }
