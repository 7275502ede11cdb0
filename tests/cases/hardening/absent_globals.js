// None of these exist, neither as a global property nor as a bare identifier.
const names = ["process", "require", "module", "exports", "fetch", "setTimeout", "setInterval", "clearTimeout", "clearInterval", "setImmediate", "queueMicrotask", "WebAssembly", "SharedArrayBuffer", "Atomics", "WeakRef", "FinalizationRegistry", "std", "os", "print", "scriptArgs", "__date_clock", "__loadScript", "gc", "XMLHttpRequest", "importScripts", "Deno", "Bun", "navigator", "Worker", "bjson", "__filename"];
const present = [];
for (const n of names) {
  if (n in globalThis || Object.getOwnPropertyDescriptor(globalThis, n)) present.push(n);
}
const bare = [typeof process, typeof require, typeof fetch, typeof setTimeout, typeof std,
              typeof os, typeof print, typeof scriptArgs, typeof WebAssembly, typeof Atomics,
              typeof SharedArrayBuffer, typeof __date_clock, typeof queueMicrotask];
return { present, bare: bare.filter(t => t !== "undefined") };
