// String.prototype.isWellFormed / toWellFormed (ES2024).
const out = {};
const show = (v) => v === undefined ? "undefined" : Object.is(v, -0) ? "-0" : typeof v === "bigint" ? v + "n" : typeof v === "number" && !Number.isFinite(v) ? String(v) : v;
const t = (name, f) => { try { const v = f(); out[name] = Array.isArray(v) ? Array.from(v, show) : show(v); } catch (e) { out[name] = "throws " + e.constructor.name; } };
const fn = (f) => [typeof f, f.length, f.name, Object.hasOwnProperty.call(f, "prototype"), Object.getPrototypeOf(f) === Function.prototype];
const enumerable = (o, k) => Object.getOwnPropertyDescriptor(o, k).enumerable;
t("fn", () => [fn(String.prototype.isWellFormed), fn(String.prototype.toWellFormed)]);
t("enumerable", () => [enumerable(String.prototype, "isWellFormed"), enumerable(String.prototype, "toWellFormed")]);
const cases = ["", "abc", "\ud83d\ude00", "a\ud800", "\udc00b", "\ud800\ud800", "\udc00\ud800", "x\ud83d\ude00\ud83d", "\ud83dx\ude00"];
t("isWellFormed", () => cases.map((s) => s.isWellFormed()));
t("toWellFormed", () => cases.map((s) => [...s.toWellFormed()].map((c) => c.codePointAt(0).toString(16)).join(" ")));
t("same string when well formed", () => ["abc".toWellFormed() === "abc", "\ud83d\ude00".toWellFormed().length]);
t("coercion", () => [String.prototype.isWellFormed.call(12), String.prototype.toWellFormed.call({ toString: () => "\ud800" }).charCodeAt(0)]);
t("null", () => String.prototype.isWellFormed.call(null));
t("undefined", () => String.prototype.toWellFormed.call(undefined));
t("symbol", () => String.prototype.isWellFormed.call(Symbol()));
t("long", () => { const s = "ab".repeat(5000) + "\ud800" + "cd".repeat(5000); return [s.isWellFormed(), s.toWellFormed().length, s.toWellFormed().indexOf("\ufffd")]; });
return out;
