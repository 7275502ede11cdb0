declare module "m" { export function f(): void; export const x: number }
return 2
