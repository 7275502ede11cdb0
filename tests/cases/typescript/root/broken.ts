export enum E { A }
export const x: number = ;
