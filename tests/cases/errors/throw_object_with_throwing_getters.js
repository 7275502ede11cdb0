// Describing a hostile thrown object never crashes or hangs.
const e = new Error("m");
Object.defineProperty(e, "message", { get() { throw new Error("nope"); } });
Object.defineProperty(e, "stack", { get() { for (;;) {} } });
throw e;
