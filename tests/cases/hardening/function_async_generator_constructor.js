// Dynamic code must be unreachable: Object.getPrototypeOf(async function* () {}).constructor("__mark(); yield 1")().next() throws a TypeError before any code runs.
let ran = false;
globalThis.__mark = () => { ran = true; };
try {
  Object.getPrototypeOf(async function* () {}).constructor("__mark(); yield 1")().next();
  return "no error (ran=" + ran + ")";
} catch (e) {
  return ran ? "ran" : e.name;
}
