// 49 two-byte chars, one ASCII and two quotes: 101 UTF-8 bytes
return "\u00e9".repeat(49) + "x";
