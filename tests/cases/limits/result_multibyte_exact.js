// 49 two-byte chars plus two quotes: 100 UTF-8 bytes (51 UTF-16 units)
return "\u00e9".repeat(49);
