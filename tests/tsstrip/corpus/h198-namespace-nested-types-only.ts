namespace A.B.C { type X = 1 }
module M { export interface I {} }
return 2
