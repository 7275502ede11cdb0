// Set.prototype.union / intersection / difference / symmetricDifference / isSubsetOf /
// isSupersetOf / isDisjointFrom (ES2025), with the set-like protocol (size, has, keys).
const out = {};
const show = (v) => v === undefined ? "undefined" : Object.is(v, -0) ? "-0" : typeof v === "bigint" ? v + "n" : typeof v === "number" && !Number.isFinite(v) ? String(v) : v;
const t = (name, f) => { try { const v = f(); out[name] = Array.isArray(v) ? Array.from(v, show) : show(v); } catch (e) { out[name] = "throws " + e.constructor.name; } };
const fn = (f) => [typeof f, f.length, f.name, Object.getPrototypeOf(f) === Function.prototype]; // no prototype: see frozen.js
const enumerable = (o, k) => Object.getOwnPropertyDescriptor(o, k).enumerable;
const names = ["union", "intersection", "difference", "symmetricDifference", "isSubsetOf", "isSupersetOf", "isDisjointFrom"];
t("fn", () => names.map((k) => fn(Set.prototype[k]).join()));
t("enumerable", () => names.map((k) => enumerable(Set.prototype, k)));
const A = new Set([1, 2, 3]), B = new Set([3, 4]);
const list = (s) => [...s].join();
t("union", () => [list(A.union(B)), list(B.union(A)), list(A), A.union(B) instanceof Set, A.union(A) !== A]);
t("intersection", () => [list(A.intersection(B)), list(B.intersection(A)), list(A.intersection(new Set()))]);
t("intersection order small this", () => list(new Set([3, 2]).intersection(new Set([1, 2, 3, 4]))));
t("intersection order big this", () => list(new Set([1, 2, 3, 4]).intersection(new Set([3, 2]))));
t("difference", () => [list(A.difference(B)), list(B.difference(A)), list(A.difference(new Set([1, 2, 3, 4, 5])))]);
t("symmetricDifference", () => [list(A.symmetricDifference(B)), list(B.symmetricDifference(A))]);
t("isSubsetOf", () => [new Set([1]).isSubsetOf(A), A.isSubsetOf(B), new Set().isSubsetOf(B), A.isSubsetOf(A)]);
t("isSupersetOf", () => [A.isSupersetOf(new Set([1, 2])), A.isSupersetOf(B), A.isSupersetOf(new Set())]);
t("isDisjointFrom", () => [A.isDisjointFrom(B), A.isDisjointFrom(new Set([7])), new Set([1, 2, 3, 4, 5]).isDisjointFrom(new Set([9]))]);
t("map as set-like", () => [list(A.union(new Map([[9, "x"]]))), A.isSubsetOf(new Map([[1], [2], [3]]))]);
const setLike = (items, log) => ({
  get size() { log.push("size"); return items.length; },
  get has() { log.push("get has"); return (v) => { log.push("has " + v); return items.includes(v); }; },
  get keys() { log.push("get keys"); return () => { log.push("keys()"); let i = 0; return { get next() { log.push("get next"); return () => (i < items.length ? { done: false, value: items[i++] } : { done: true }); }, return() { log.push("return"); return {}; } }; }; },
});
for (const m of names) {
  t("protocol " + m + " small other", () => { const log = []; const r = new Set([1, 2, 3])[m](setLike([2], log)); return [r instanceof Set ? list(r) : r, ...log]; });
  t("protocol " + m + " big other", () => { const log = []; const r = new Set([1])[m](setLike([5, 1, 6], log)); return [r instanceof Set ? list(r) : r, ...log]; });
}
t("-0 from keys", () => { const r = new Set([1]).union({ size: 1, has: () => false, keys: () => [-0][Symbol.iterator]() }); return Object.is([...r][1], 0); });
t("size NaN", () => A.union({ size: undefined, has() {}, keys() {} }));
t("size negative", () => A.union({ size: -1, has() {}, keys() {} }));
t("size coercion", () => list(A.union({ size: "1", has() {}, keys: () => [5][Symbol.iterator]() })));
t("has not callable", () => A.union({ size: 1, has: 1, keys() {} }));
t("keys not callable", () => A.union({ size: 1, has() {}, keys: null }));
t("not an object", () => A.union([1, 2]).size);
t("primitive", () => A.union(1));
t("array", () => A.isSubsetOf([1, 2, 3]));
t("keys result not object", () => A.union({ size: 1, has() {}, keys: () => 1 }));
t("receiver", () => Set.prototype.union.call(new Map(), A));
t("receiver plain", () => Set.prototype.isSubsetOf.call({ size: 0, has() {}, keys() {} }, A));
t("has truthiness", () => [A.intersection({ size: 10, has: (v) => (v === 2 ? "yes" : 0), keys() {} }).size, A.isSubsetOf({ size: 10, has: () => 1, keys() {} })]);
t("subclass result", () => { class S extends Set {} return new S([1]).union(new Set()).constructor === Set; });
return out;
