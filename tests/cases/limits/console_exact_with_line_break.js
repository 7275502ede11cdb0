// An entry costs its UTF-8 bytes plus one: 10 + 1 = 11 fits a limit of 11 exactly.
console.log("0123456789");
return 1;
