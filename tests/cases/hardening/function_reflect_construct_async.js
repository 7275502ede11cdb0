// Dynamic code must be unreachable: Reflect.construct(Object.getPrototypeOf(async () => {}).constructor, ["__mark()"])() throws a TypeError before any code runs.
let ran = false;
globalThis.__mark = () => { ran = true; };
try {
  Reflect.construct(Object.getPrototypeOf(async () => {}).constructor, ["__mark()"])();
  return "no error (ran=" + ran + ")";
} catch (e) {
  return ran ? "ran" : e.name;
}
