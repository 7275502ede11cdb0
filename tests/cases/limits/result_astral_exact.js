// 24 four-byte chars, two ASCII and two quotes: 100 UTF-8 bytes
return "\u{1F600}".repeat(24) + "ab";
