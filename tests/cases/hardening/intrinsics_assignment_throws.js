"use strict";
// In strict mode, writes to frozen intrinsics throw TypeError (not silently ignored).
const TypedArray = Object.getPrototypeOf(Int8Array);
const GenProto = Object.getPrototypeOf(function* () {}).prototype;
const AsyncGenProto = Object.getPrototypeOf(async function* () {}).prototype;
const ArrayIterProto = Object.getPrototypeOf([][Symbol.iterator]());
const IterProto = Object.getPrototypeOf(ArrayIterProto);
const attempts = {
  "Object.prototype.polluted": () => { Object.prototype.polluted = 1; },
  "Object.prototype.toString": () => { Object.prototype.toString = () => "x"; },
  "Array.prototype.push": () => { Array.prototype.push = null; },
  "Array.prototype[Symbol.iterator]": () => { Array.prototype[Symbol.iterator] = null; },
  "Function.prototype.call": () => { Function.prototype.call = null; },
  "Error.prototype.toString": () => { Error.prototype.toString = null; },
  "TypeError.prototype.name": () => { TypeError.prototype.name = "x"; },
  "Error.captureStackTrace": () => { Error.captureStackTrace = 1; },
  "Promise.prototype.then": () => { Promise.prototype.then = null; },
  "Promise.resolve": () => { Promise.resolve = null; },
  "TypedArray.prototype.set": () => { TypedArray.prototype.set = null; },
  "Uint8Array.prototype.polluted": () => { Uint8Array.prototype.polluted = 1; },
  "IteratorPrototype[Symbol.iterator]": () => { IterProto[Symbol.iterator] = null; },
  "ArrayIteratorPrototype.next": () => { ArrayIterProto.next = null; },
  "GeneratorPrototype.next": () => { GenProto.next = null; },
  "AsyncGeneratorPrototype.next": () => { AsyncGenProto.next = null; },
  "JSON.parse": () => { JSON.parse = null; },
  "Math.random": () => { Math.random = () => 4; },
  "Date.now": () => { Date.now = () => 0; },
  "console.log": () => { console.log = null; },
  "RegExp.prototype.exec": () => { RegExp.prototype.exec = null; },
  "Symbol.iterator": () => { Symbol.iterator = null; },
  "defineProperty(Object.prototype)": () => { Object.defineProperty(Object.prototype, "p", { value: 1 }); },
  "setPrototypeOf(Array.prototype)": () => { Object.setPrototypeOf(Array.prototype, null); },
  "delete Array.prototype.map": () => { delete Array.prototype.map; },
};
const out = [];
for (const [name, f] of Object.entries(attempts)) {
  try { f(); out.push(name + ": no error"); } catch (e) { out.push(name + ": " + e.name); }
}
return out;
