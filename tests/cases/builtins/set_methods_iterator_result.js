// The set-like's iterator must return objects (IteratorStepValue): a TypeError otherwise.
// (Checked against the specification by hand: core-js, Node 20's stand-in, loops forever here.)
const out = [];
for (const m of ["union", "symmetricDifference", "isSupersetOf", "difference", "intersection", "isDisjointFrom"]) {
  let calls = 0;
  try {
    new Set([1])[m]({ size: 0.5, has: () => false, keys: () => ({ next: () => (calls++ > 3 ? { done: true } : 1) }) });
    out.push(m + ": no error");
  } catch (e) {
    out.push(m + ": " + e.constructor.name + " after " + calls);
  }
}
return out;
