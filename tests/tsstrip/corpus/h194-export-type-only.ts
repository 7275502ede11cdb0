type A = number;
export type { A };
export type { B } from "./b";
export type * from "./c";
return 3
