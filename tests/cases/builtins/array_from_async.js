// Array.fromAsync (ES2026; stage 4 in 2025).
const out = {};
const fn = (f) => [typeof f, f.length, f.name, Object.getPrototypeOf(f) === Function.prototype]; // no prototype: see frozen.js
const r = async (name, f) => { try { const v = await f(); out[name] = Array.isArray(v) ? v.map((x) => (x === undefined ? "undefined" : x)) : v; } catch (e) { out[name] = "throws " + e.constructor.name; } };
out.fn = fn(Array.fromAsync);
out.enumerable = Object.getOwnPropertyDescriptor(Array, "fromAsync").enumerable;
out.returnsPromise = Array.fromAsync([]) instanceof Promise;
await r("array", () => Array.fromAsync([1, Promise.resolve(2), 3]));
await r("async generator", () => Array.fromAsync((async function* () { yield 1; yield Promise.resolve(2); yield 3; })()));
await r("sync generator", () => Array.fromAsync((function* () { yield "a"; yield Promise.resolve("b"); })()));
await r("string", () => Array.fromAsync("h\ud83d\ude00"));
await r("set", () => Array.fromAsync(new Set([1, 2])));
await r("array-like", () => Array.fromAsync({ length: 3, 0: "x", 1: Promise.resolve("y") }));
await r("mapfn", () => Array.fromAsync([1, 2], (x, i) => x * 10 + i));
await r("async mapfn", () => Array.fromAsync([1, 2], async (x) => x + 1));
await r("thisArg", () => Array.fromAsync([1], function () { return this.v; }, { v: "this" }));
await r("mapfn not callable", () => Array.fromAsync([1], "nope"));
await r("null", () => Array.fromAsync(null));
await r("undefined", () => Array.fromAsync());
await r("rejection", () => Array.fromAsync([Promise.reject(new RangeError("r"))]));
await r("empty", () => Array.fromAsync([]));
await r("holes", () => Array.fromAsync([1, , 3]));
await r("not a constructor receiver", async () => { const a = await Array.fromAsync.call(undefined, [1, 2]); return [Array.isArray(a), a.length]; });
await r("constructor receiver", async () => { function C() { this.made = true; } const a = await Array.fromAsync.call(C, [1, 2]); return [a instanceof C, a.made, a.length, a[1]]; });
// core-js (the Node 20 stand-in) constructs with no argument; the proposal passes the length.
await r("array-like constructor gets length", async () => { let got; function C(n) { got = n; } await Array.fromAsync.call(C, { length: 2, 0: 1, 1: 2 }); return got; });
await r("mapfn throws closes iterator", async () => { const log = []; const it = { [Symbol.asyncIterator]() { return { next: async () => ({ done: false, value: 1 }), return: async () => { log.push("return"); return {}; } }; } }; try { await Array.fromAsync(it, () => { throw new SyntaxError("m"); }); } catch (e) { log.push(e.constructor.name); } return log; });
await r("uses asyncIterator first", async () => { const log = []; const o = { get [Symbol.asyncIterator]() { log.push("async"); return undefined; }, get [Symbol.iterator]() { log.push("sync"); return [7][Symbol.iterator].bind([7]); } }; const a = await Array.fromAsync(o); return [...log, ...a]; });
await r("sync errors are rejections", async () => { let sync = true; const p = Array.fromAsync([1], 5); try { await p; } catch (e) { return [p instanceof Promise, e.constructor.name]; } });
return out;
