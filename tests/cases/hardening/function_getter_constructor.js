// Dynamic code must be unreachable: Object.getOwnPropertyDescriptor(Object.prototype, "__proto__").get.constructor("__mark()")() throws a TypeError before any code runs.
let ran = false;
globalThis.__mark = () => { ran = true; };
try {
  Object.getOwnPropertyDescriptor(Object.prototype, "__proto__").get.constructor("__mark()")();
  return "no error (ran=" + ran + ")";
} catch (e) {
  return ran ? "ran" : e.name;
}
