// An error's cause crosses the boundary (docs/values.md), nested causes too.
return new Error("outer", { cause: new RangeError("inner", { cause: { code: 7 } }) });
