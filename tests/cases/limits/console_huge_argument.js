// An argument larger than the whole console budget is cut and marked, never dropped silently.
console.log("x".repeat(2e6));
return 1;
