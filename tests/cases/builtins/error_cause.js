// The `cause` option of Error, the native errors and AggregateError (ES2022).
const out = {};
const d = (e) => { const x = Object.getOwnPropertyDescriptor(e, "cause"); return x ? [x.value === undefined ? "undefined" : x.value, x.writable, x.enumerable, x.configurable] : "absent"; };
for (const C of [Error, EvalError, RangeError, ReferenceError, SyntaxError, TypeError, URIError]) {
  out[C.name] = [d(new C("m", { cause: "c" })), d(C("m", { cause: 1 })), d(new C("m")), d(new C("m", {})), d(new C("m", { cause: undefined })), C.length, new C("m", { cause: 0 }) instanceof C];
}
out.AggregateError = [d(new AggregateError([], "m", { cause: "c" })), d(new AggregateError([])), AggregateError.length, new AggregateError([1], "m", { cause: 2 }).errors];
out.inherited = d(new Error("m", Object.create({ cause: "proto" })));
out.getter = d(new Error("m", { get cause() { return "got"; } }));
out.primitiveOptions = [d(new Error("m", "cause")), d(new Error("m", 1)), d(new Error("m", null))];
out.message = new Error("m", { cause: 1 }).message;
out.noMessage = [Object.hasOwn(new Error(undefined, { cause: 1 }), "message"), d(new Error(undefined, { cause: 1 }))];
out.proxy = (() => { const log = []; new Error("m", new Proxy({ cause: 1 }, { has(t, k) { log.push("has " + String(k)); return k in t; }, get(t, k) { log.push("get " + String(k)); return t[k]; } })); return log; })();
out.order = (() => { const log = []; try { new AggregateError({ [Symbol.iterator]() { log.push("errors"); return [][Symbol.iterator](); } }, { toString() { log.push("message"); return "m"; } }, { get cause() { log.push("cause"); return 1; } }); } catch (e) { log.push(String(e)); } return log; })();
out.throwingGetter = (() => { try { new Error("m", { get cause() { throw new RangeError("g"); } }); return "no"; } catch (e) { return e.constructor.name; } })();
class MyError extends Error { name = "MyError"; }
out.subclass = [d(new MyError("m", { cause: "s" })), new MyError("m") instanceof Error, String(new MyError("x"))];
out.stack = typeof new Error("m", { cause: 1 }).stack;
out.string = String(new TypeError("bad", { cause: "x" }));
out.keys = Object.keys(new Error("m", { cause: 1 }));
out.json = JSON.stringify(new Error("m", { cause: 1 }));
return out;
