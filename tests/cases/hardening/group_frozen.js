"use strict";
// Group objects are frozen and their global binding is locked.
const r = [];
for (const f of [() => { store.x = 1; }, () => { store.get = () => 1; }, () => { delete store.get; },
                 () => { store = 1; }, () => { globalThis.store = {}; },
                 () => { Object.defineProperty(store, "y", { value: 1 }); },
                 () => { Object.setPrototypeOf(store, { then() {} }); },
                 () => { store.get.x = 1; }]) {
  try { f(); r.push("no error"); } catch (e) { r.push(e.name); }
}
const d = Object.getOwnPropertyDescriptor(globalThis, "store");
const fd = Object.getOwnPropertyDescriptor(store, "get");
return [r, Object.isFrozen(store), Object.isFrozen(store.get), d.writable, d.configurable,
        fd.writable, fd.configurable];
