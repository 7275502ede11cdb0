// a syntax error on line 4 of the user's text
const a = 1;
const b = 2;
let = = 3;
return a + b;
