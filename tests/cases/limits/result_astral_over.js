// 25 four-byte chars and two quotes: 102 UTF-8 bytes (only 52 UTF-16 units)
return "\u{1F600}".repeat(25);
