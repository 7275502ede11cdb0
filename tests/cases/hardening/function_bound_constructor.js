// Dynamic code must be unreachable: (function () {}).bind(null).constructor("__mark(); return 1")() throws a TypeError before any code runs.
let ran = false;
globalThis.__mark = () => { ran = true; };
try {
  (function () {}).bind(null).constructor("__mark(); return 1")();
  return "no error (ran=" + ran + ")";
} catch (e) {
  return ran ? "ran" : e.name;
}
