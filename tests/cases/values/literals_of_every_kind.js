// Every kind of literal compiles in the compile context (regexp, BigInt, template, class fields, spread, generators).
const re = /a(b+)c/gi; const big = 12345678901234567890n; const t = `x${1 + 1}y`;
const tag = (s, ...v) => s.raw.join("|") + v.join(",");
class A { #p = 1; static s = 2; get p() { return this.#p } }
const o = { a: 1, ...{ b: 2 } }; const [x, , y = 3] = [1, 2];
const gen = function* () { yield 1 }; const ag = async function* () { yield 2 };
let r = []; for await (const v of ag()) r.push(v);
return [re.exec("xABBCx")[1], big * 2n, t, tag`a${1}b${2}c`, new A().p, A.s, o, x, y, [...gen()], r, 0.1 + 0.2, "é".normalize("NFD").length, /\p{L}/u.test("é")];
