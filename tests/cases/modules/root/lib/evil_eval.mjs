// Every route to dynamic code from inside a loaded module, and through its namespace.
const tries = {
  eval: () => eval("1"),
  indirect: () => (0, eval)("1"),
  Function: () => Function("return 1")(),
  arrowCtor: () => (() => {}).constructor("return 1")(),
  asyncCtor: () => (async () => {}).constructor("return 1"),
  genCtor: () => (function* () {}).constructor("yield 1"),
};
export const results = Object.fromEntries(Object.entries(tries).map(([k, f]) => {
  try { f(); return [k, "ran"]; } catch (e) { return [k, e.name]; }
}));
