await null;
const o = undefined;
o.x = 1;
