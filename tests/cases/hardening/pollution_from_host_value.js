// A host answer with "__proto__"/"constructor" keys creates own properties only.
const v = await h.f();
return [
  Object.keys(v),
  Object.getPrototypeOf(v) === Object.prototype,
  typeof ({}).polluted,
  typeof Object.prototype.polluted,
  typeof v.polluted,
  Object.getPrototypeOf(v.__proto__) === Object.prototype,
];
