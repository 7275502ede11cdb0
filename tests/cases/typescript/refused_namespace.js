namespace N { export const v = 1; }
return N.v;
