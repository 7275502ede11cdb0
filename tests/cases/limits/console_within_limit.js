console.log("a".repeat(20));
console.warn("b".repeat(10));
return 1;
