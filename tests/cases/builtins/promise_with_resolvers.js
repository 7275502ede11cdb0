// Promise.withResolvers (ES2024).
const out = {};
const show = (v) => v === undefined ? "undefined" : Object.is(v, -0) ? "-0" : typeof v === "bigint" ? v + "n" : typeof v === "number" && !Number.isFinite(v) ? String(v) : v;
const t = (name, f) => { try { const v = f(); out[name] = Array.isArray(v) ? Array.from(v, show) : show(v); } catch (e) { out[name] = "throws " + e.constructor.name; } };
const fn = (f) => [typeof f, f.length, f.name, Object.getPrototypeOf(f) === Function.prototype]; // no prototype: see frozen.js
const enumerable = (o, k) => Object.getOwnPropertyDescriptor(o, k).enumerable;
t("fn", () => fn(Promise.withResolvers));
t("enumerable", () => enumerable(Promise, "withResolvers"));
const r = Promise.withResolvers();
t("shape", () => [Object.keys(r), r.promise instanceof Promise, typeof r.resolve, typeof r.reject, Object.getPrototypeOf(r) === Object.prototype]);
r.resolve(42);
out.resolved = await r.promise;
const r2 = Promise.withResolvers();
r2.reject(new TypeError("no"));
out.rejected = await r2.promise.then(() => "fulfilled", (e) => e.constructor.name + ": " + e.message);
const r3 = Promise.withResolvers();
r3.resolve(1);
r3.resolve(2);
r3.reject(3);
out["settles once"] = await r3.promise;
class MyPromise extends Promise {}
t("subclass", () => Promise.withResolvers.call(MyPromise).promise instanceof MyPromise);
t("custom constructor", () => { let executor; function C(e) { executor = e; e(() => {}, () => {}); } const res = Promise.withResolvers.call(C); return [res.promise instanceof C, typeof res.resolve, executor.length]; });
t("not a constructor", () => Promise.withResolvers.call({}));
t("undefined receiver", () => Promise.withResolvers.call(undefined));
t("arrow receiver", () => Promise.withResolvers.call(() => {}));
t("resolvers not callable", () => Promise.withResolvers.call(function (e) { e(1, 2); }));
t("executor twice", () => Promise.withResolvers.call(function (e) { e(() => {}, () => {}); e(() => {}, () => {}); }));
return out;
