"use strict";
// Every global binding is non-writable and non-configurable; reassigning one throws.
const loose = [];
for (const k of Reflect.ownKeys(globalThis)) {
  const d = Object.getOwnPropertyDescriptor(globalThis, k);
  if (d.configurable || ("writable" in d && d.writable) || d.get || d.set) loose.push(String(k));
}
const writes = [];
for (const f of [() => { Math = 1; }, () => { globalThis.JSON = 1; }, () => { console = 1; },
                 () => { delete globalThis.Promise; }, () => { globalThis.Array = 1; },
                 () => { Object.defineProperty(globalThis, "Object", { value: 1 }); }]) {
  try { f(); writes.push("no error"); } catch (e) { writes.push(e.name); }
}
return { loose, writes, mathIsMath: typeof Math.max };
