declare enum E { A, B }
declare const enum F { C = 1 }
return 4
