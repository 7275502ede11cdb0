// Dynamic code must be unreachable: Reflect.apply(eval, undefined, ["__mark(); 1"]) throws a TypeError before any code runs.
let ran = false;
globalThis.__mark = () => { ran = true; };
try {
  Reflect.apply(eval, undefined, ["__mark(); 1"]);
  return "no error (ran=" + ran + ")";
} catch (e) {
  return ran ? "ran" : e.name;
}
