// Inherited members of a group are ordinary intrinsics; none of them reaches the host.
const out = [];
for (const k of ["constructor", "__proto__", "toString", "hasOwnProperty", "then", "valueOf",
                 "toLocaleString", "isPrototypeOf", "propertyIsEnumerable", "__lookupGetter__"]) {
  const v = store[k];
  let r = typeof v;
  if (typeof v === "function") {
    try { await v.call(store, "get"); r += ":returned"; } catch (e) { r += ":" + e.name; }
  }
  out.push(k + "=" + r);
}
return [Object.getOwnPropertyNames(store), out];
