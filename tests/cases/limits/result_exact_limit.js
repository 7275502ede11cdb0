// "x" * 98 plus two quotes: 100 bytes
return "x".repeat(98);
