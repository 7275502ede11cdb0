"use strict";
// Walks every object reachable from the global object by own properties (data values, getters,
// setters) and prototypes, plus the intrinsics only reachable through instances, and lists
// every one that is not frozen. The global object itself is checked by global_bindings_locked.
const seen = new Set([globalThis]);
const bad = [];
function walk(v, path) {
  if ((typeof v !== "object" && typeof v !== "function") || v === null || seen.has(v)) return;
  seen.add(v);
  if (!Object.isFrozen(v)) bad.push(path);
  for (const k of Reflect.ownKeys(v)) {
    const d = Object.getOwnPropertyDescriptor(v, k);
    const p = path + "." + String(k);
    if ("value" in d) walk(d.value, p);
    if (d.get) walk(d.get, p + "<get>");
    if (d.set) walk(d.set, p + "<set>");
  }
  walk(Object.getPrototypeOf(v), path + ".<proto>");
}
for (const k of Reflect.ownKeys(globalThis)) {
  const d = Object.getOwnPropertyDescriptor(globalThis, k);
  walk(d.value, String(k));
}
walk(Object.getPrototypeOf(globalThis), "<global proto>");
const roots = {
  TypedArray: Object.getPrototypeOf(Int8Array),
  AsyncFunction: Object.getPrototypeOf(async function () {}).constructor,
  GeneratorFunction: Object.getPrototypeOf(function* () {}).constructor,
  AsyncGeneratorFunction: Object.getPrototypeOf(async function* () {}).constructor,
  // a generator's own prototype is a fresh per-function object; %GeneratorPrototype% is next
  Generator: Object.getPrototypeOf((function* () {})()),
  AsyncGenerator: Object.getPrototypeOf((async function* () {})()),
  ArrayIterator: [][Symbol.iterator](),
  MapIterator: new Map().entries(),
  SetIterator: new Set().values(),
  StringIterator: ""[Symbol.iterator](),
  RegExpStringIterator: /a/g[Symbol.matchAll]("a"),
  Arguments: (function () { return arguments; })(),
  StrictThrower: Object.getOwnPropertyDescriptor(Function.prototype, "caller"),
  consoleLog: console.log,
};
for (const [name, v] of Object.entries(roots)) {
  if (v && typeof v === "object" && "get" in v) walk(v.get, name + "<get>");
  else walk(Object.getPrototypeOf(v), name + ".<proto>");
}
return { checked: seen.size > 300, notFrozen: bad };
