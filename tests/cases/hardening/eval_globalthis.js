// Dynamic code must be unreachable: globalThis.eval("__mark(); 1") throws a TypeError before any code runs.
let ran = false;
globalThis.__mark = () => { ran = true; };
try {
  globalThis.eval("__mark(); 1");
  return "no error (ran=" + ran + ")";
} catch (e) {
  return ran ? "ran" : e.name;
}
