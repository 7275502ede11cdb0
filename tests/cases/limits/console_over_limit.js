console.log("a".repeat(30));
console.log("b".repeat(30));
console.log("never shown");
return 1;
