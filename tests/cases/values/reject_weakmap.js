// weak collections do not cross
return { w: new WeakMap() };
