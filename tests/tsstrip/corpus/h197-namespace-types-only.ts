namespace N { export type A = number; export interface I { a: A } }
return 1
