// Objects whose formatting throws or loops are still logged without failing the run.
const c = { name: "cyclic" };
c.self = c;
console.log(c);
console.log({ toJSON() { throw new Error("no"); } });
console.log(new Proxy({}, { get() { throw new Error("trap"); } }));
console.log(Object.create(null));
console.log(Symbol("s"));
return "still running";
