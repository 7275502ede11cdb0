export interface I { a: number }
export type T = string;
export declare const x: number;
return 4
