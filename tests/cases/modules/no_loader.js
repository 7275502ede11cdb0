// Without a module loader an import fails clearly.
return await import("./lib/util.mjs");
