// The new builtins are frozen with every other intrinsic: a guest cannot replace or extend them.
const TA = Object.getPrototypeOf(Int8Array.prototype);
const where = [
  [Array.prototype, "at"], [Array.prototype, "findLast"], [Array.prototype, "toSorted"], [Array.prototype, "with"],
  [String.prototype, "at"], [String.prototype, "toWellFormed"], [TA, "at"], [TA, "toReversed"],
  [Object, "hasOwn"], [Object, "groupBy"], [Map, "groupBy"], [Promise, "withResolvers"], [Array, "fromAsync"],
  [Set.prototype, "union"], [Set.prototype, "isDisjointFrom"], [globalThis, "structuredClone"],
];
const bad = [];
for (const [o, k] of where) {
  const d = Object.getOwnPropertyDescriptor(o, k);
  if (!d || d.writable || d.configurable || d.enumerable || !Object.isFrozen(d.value)) {
    bad.push(k);
  }
  const before = o[k];
  try {
    o[k] = 1;
  } catch (e) {}
  if (o[k] !== before) {
    bad.push(k + " assignable");
  }
  if (Object.hasOwn(before, "prototype")) {
    bad.push(k + " has a prototype");
  }
  try {
    new before();
    bad.push(k + " constructs");
  } catch (e) {}
}
const fns = where.map(([o, k]) => o[k]);
Array.prototype.at.extra = 1; // sloppy mode: silently ignored
return [bad, fns.every((f) => Object.isFrozen(f)), "extra" in Array.prototype.at, Object.isFrozen(Array.prototype[Symbol.unscopables])];
