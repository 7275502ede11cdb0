// "x" * 99 plus two quotes: 101 bytes
return "x".repeat(99);
