// The same when the run fails: reading the thrown error's message runs no host call.
const e = new Error("boom");
Object.defineProperty(e, "message", { get() { echo.f(1); return "boom"; } });
throw e;
