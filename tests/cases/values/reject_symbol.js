// symbols do not cross
return { s: Symbol("s") };
