// A run with a module loader keeps its compile context alive to compile modules; the guest
// still reaches no compiler: eval and every Function constructor throw, in the entry and in a
// loaded module, before and after modules are loaded.
const tries = [() => eval("1"), () => (0, eval)("1"), () => Function("return 1")(),
               () => (() => {}).constructor("return 1")()];
const before = tries.map((f) => { try { f(); return "ran"; } catch (e) { return e.name; } });
const m = await import("./lib/evil_eval.mjs");
const ns = Object.getPrototypeOf(m);
const after = tries.map((f) => { try { f(); return "ran"; } catch (e) { return e.name; } });
return { before, module: m.results, after, ns };
