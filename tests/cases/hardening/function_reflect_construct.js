// Dynamic code must be unreachable: Reflect.construct(Function, ["__mark(); return 1"])() throws a TypeError before any code runs.
let ran = false;
globalThis.__mark = () => { ran = true; };
try {
  Reflect.construct(Function, ["__mark(); return 1"])();
  return "no error (ran=" + ran + ")";
} catch (e) {
  return ran ? "ran" : e.name;
}
