// weak collections do not cross
return [new WeakSet()];
